// Package ltl is the policy language: its syntax tree, parser, printer,
// JSON form, checks and classifier (docs/policy-language.md).
//
// A formula is LTLf with past operators (G F X U, P H S S_last), past
// operators scoped to a target or a lineage (P_target H_target P_chain
// H_chain), and first-order predicates over the artifact graph
// (quantifiers, comprehensions, membership, comparisons, count).
//
// # What a name means
//
// The package decides statically what the evaluators must agree on:
//
//   - RunLevelLeaves: the leaves read over the whole run rather than the
//     run as it stood at their position;
//   - ScopedImplication: T → ψ with T a type name and ψ a state formula is
//     one state leaf, read of each thing T matched at the position (the
//     action when its type is T, every artifact of type T it produced),
//     whose bare names read the matched artifact's fields first;
//   - StringConstant: a lowercase name that nothing binds and that is no
//     action field (ActionFields), compared by =, ≠ or ∈ with a field of a
//     bound variable, is a string constant (s.status = recorded);
//   - Collections: the names a quantifier can range over without a call.
//
// The reference evaluator (policy/eval) and the incremental monitor
// (monitor) both call these, so that they read a formula the same way.
package ltl
