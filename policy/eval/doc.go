// Package eval is the reference evaluator: the direct semantics of the
// policy language over a complete trace (Evaluate, HoldsAt), written for
// clarity rather than speed, and the state leaves (State, CompileLeaf) that
// the incremental monitor reuses so that an atom means the same to both.
//
// # Scoping
//
// A state leaf is evaluated at a position over the run as it stood when the
// position was sealed, except run-level leaves (ltl.RunLevelLeaves), which
// read the whole run. In T → ψ and T(ψ) (ltl.ScopedImplication), ψ is read
// of each artifact of type T the action produced (and of the action itself
// when its type is T): the matched artifact is bound in the environment
// under a name no variable can have, and a bare name in ψ reads its field
// (id, type, name, derived_from, producer, then payload) before the
// action's; status atoms read its status. ancestors(S) of a set is its
// members and their derived_from closure, and a type name on the left of ∈
// matches members by type. A lowercase name that ltl.StringConstant
// recognises is a constant compared case-insensitively. ref_model(id)
// reads the action's request and the run's declared reference models.
//
// The incremental indexes (the output index of quantifiers over actions,
// running counts) change no answer; index_test checks them against plain
// evaluation. monitor/oracle_test checks this package against an oracle
// that shares none of its code.
package eval
