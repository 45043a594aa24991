// Package stdcheck is the library of standard named checks: the structural
// checks reference traces name instead of writing a formula
// ("formula": "goals_reference_valid_artifacts"), each defined once in the
// policy language itself (checks.yaml, embedded), never as special code.
// A rule whose formula is exactly one of these names means the check's
// formula; the rule loader (policy/ruleset) expands it, and
// `ponens policy check` prints the expansion.
package stdcheck
