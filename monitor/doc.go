// Package monitor is the incremental monitor: it compiles rules into
// programs over a rule's propositions and advances them one event at a
// time, emitting verdict transitions (docs/verdicts.md), and serves the
// decision service (Decide).
//
// Future operators progress interned obligations; past operators keep the
// previous position's values (Havelund–Roşu); P_target and H_target keep the
// targets at which a witness occurred, reading each position's target set
// over its whole lineage (trace.Position.TargetSet, built once per artifact
// from its parents); P_chain and H_chain keep, per artifact, whether its
// ancestry holds a witness.
//
// # Scoping
//
// State leaves are those of policy/eval, compiled once per engine. A scoped
// implication T → ψ (ltl.ScopedImplication) is one leaf, not an implication
// of two, because ψ is read of each artifact T matched; a violation is
// blamed on ψ. Run-level leaves (ltl.RunLevelLeaves) are deferred to the end
// of the run.
//
// The differential tests hold the monitor to the reference evaluator
// (diff_test.go) and both to an independent oracle (oracle_test.go).
package monitor
