// Package gen generates random formulas and random runs for property and
// differential tests. Generation is deterministic for a given *rand.Rand.
package gen

import (
	"fmt"
	"math/rand/v2"

	"github.com/ponens/ponens/policy/ltl"
)

// FormulaConfig says what the formula generator may produce.
type FormulaConfig struct {
	MaxDepth int
	// Monitorable keeps to the fragment the incremental monitor compiles:
	// no future operator and no end_event under a past operator.
	Monitorable bool
	// Structural allows quantifiers, sets, counts and comparisons.
	Structural bool
	// Scoped allows P_target, P_chain, H_target, H_chain.
	Scoped bool
}

var (
	atoms = []string{"EditFile", "ReadFile", "GitCommit", "RunTests", "completed", "failed",
		"gateway", "reasoning", "high_stakes_path", "VerificationResult", "proved", "refuted",
		"Decomposition", "action", "deploy", "start_event", "end_event"}
	// positionLeaves refer to their position; independentLeaves do not.
	positionLeaves = []string{
		"rationale ≠ ∅",
		"VerificationResult(proved ∨ sat)",
		"strength_at_least(tests)",
		"∀ x ∈ inputs(a) . ∃! b . b < a ∧ x ∈ outputs(b)",
		"∃ b . target ∈ outputs(b) ∧ a > b",
		"∃ x ∈ inputs(a) . x.type = SourceCode",
		"target ∈ {\"a.py\", \"b.py\"}",
		"target_artifact_id ∈ {x.id | x.type = IMLModel}",
		"label ≠ \"say \\\"hi\\\"\"",
		"∃ x ∈ ancestors(derived_from) . x.type = VerificationGoal",
		"∃ r ∈ residuals . r.severity ≥ High ∧ target(a) = r.target",
		"∃ x ∈ inputs(a) . x.producer.status = completed", // the producer field: the monitor keeps producers whole
	}
	independentLeaves = []string{
		"¬∃ r ∈ residuals . r.severity = Critical ∧ r.status = Open",
		"count(EditFile) ≤ 3",
		"∃ x ∈ artifacts . x.type = VerificationResult",
		"count(GitCommit) > 0",
		"∃! b . \"art1\" ∈ outputs(b)",
		"∀ t ∈ {Art1, \"art2\"} . ∃ b . t ∈ outputs(b)", // a type name, bound: found case-insensitively
		"∃ x ∈ artifacts . x.producer.status = failed",
	}
)

// Formula returns a random formula.
func Formula(r *rand.Rand, c FormulaConfig) ltl.Formula {
	return ltl.MustParse(ltl.Print(formula(r, c, c.MaxDepth, false)))
}

// formula builds a tree; inPast is true under a past operator.
func formula(r *rand.Rand, c FormulaConfig, depth int, inPast bool) ltl.Formula {
	if depth <= 0 || r.IntN(4) == 0 {
		return leaf(r, c, inPast)
	}
	type op struct {
		unary  ltl.UnaryOp
		binary ltl.BinaryOp
		isBin  bool
		future bool
		past   bool
		scoped bool
	}
	ops := []op{
		{unary: ltl.OpNot}, {binary: ltl.OpAnd, isBin: true}, {binary: ltl.OpOr, isBin: true},
		{binary: ltl.OpImplies, isBin: true},
		{unary: ltl.OpG, future: true}, {unary: ltl.OpF, future: true}, {unary: ltl.OpX, future: true},
		{binary: ltl.OpU, isBin: true, future: true},
		{unary: ltl.OpP, past: true}, {unary: ltl.OpH, past: true},
		{binary: ltl.OpS, isBin: true, past: true}, {binary: ltl.OpSLast, isBin: true, past: true},
		{unary: ltl.OpPTarget, past: true, scoped: true}, {unary: ltl.OpHTarget, past: true, scoped: true},
		{unary: ltl.OpPChain, past: true, scoped: true}, {unary: ltl.OpHChain, past: true, scoped: true},
	}
	for {
		o := ops[r.IntN(len(ops))]
		if o.scoped && !c.Scoped || o.future && inPast && c.Monitorable {
			continue
		}
		under := inPast || o.past
		if o.isBin {
			return &ltl.Binary{Op: o.binary, L: formula(r, c, depth-1, under), R: formula(r, c, depth-1, under)}
		}
		return &ltl.Unary{Op: o.unary, X: formula(r, c, depth-1, under)}
	}
}

func leaf(r *rand.Rand, c FormulaConfig, inPast bool) ltl.Formula {
	if c.Structural && r.IntN(4) == 0 {
		if r.IntN(2) == 0 {
			return ltl.MustParse(independentLeaves[r.IntN(len(independentLeaves))])
		}
		return ltl.MustParse(positionLeaves[r.IntN(len(positionLeaves))])
	}
	switch r.IntN(12) {
	case 0:
		return &ltl.Bool{Value: r.IntN(2) == 0}
	case 1:
		if !c.Structural {
			break
		}
		return ltl.MustParse(fmt.Sprintf("count(%s) ≥ %d", atoms[r.IntN(4)], r.IntN(3)))
	}
	name := atoms[r.IntN(len(atoms))]
	if inPast && c.Monitorable && name == "end_event" {
		name = "action"
	}
	return &ltl.Atom{Name: name}
}
