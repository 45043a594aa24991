// Package file is the file sink of a check: it builds and writes the two
// artifacts of seed 001 that `ponens check` leaves behind, both stamped
// formatVersion 1.
//
//   - <trace>.verdicts.jsonl, beside each trace file: the verdict stream of
//     one run, one schema.VerdictEvent per line in the order the monitor
//     emitted them. A file holding several runs gets one stream per run,
//     <name>.<runId>.verdicts.jsonl.
//   - summary.json, in the output directory: the rule manifest, the trace
//     manifest, the rule × trace matrix of terminal statuses (and, in
//     matrix.results, of pass / fail / not_applicable), the counts over its
//     cells and a content hash over the inputs.
//
// The package evaluates nothing. Layout names the traces of a check and
// places their streams; a Check is given each trace's events, verdict
// stream and the monitor's final results, and makes the summary. It derives
// each matrix cell by folding the trace's verdict stream (the last verdict
// of a rule wins; a rule with no verdict held throughout) and refuses a
// trace whose stream does not fold to the monitor's final status, so that a
// consumer linking a cell to the verdict that set it can rely on the
// agreement.
//
// The content hash is "sha256:" and the hex SHA-256 of, newline-separated:
// the JSON of the rule manifest array, then for each trace in manifest
// order its id as a JSON string and each of its events as JSON (as
// encoding/json writes schema.Event). It changes when a trace changes (an
// event, or its id: a renamed file), when the rule set changes, and when a
// rule keeps its id but changes meaning (its text, formula, description or
// enforced mode). Re-indenting a trace file or respelling a formula in the
// other surface syntax does not change it.
//
// Files are written whole or not at all: each goes to a temporary file in
// the target directory, which is renamed over the target.
package file
