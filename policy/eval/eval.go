package eval

import (
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/trace"
)

// Outcome is the offline result of a policy on a trace (seed 000 §5).
type Outcome string

// Outcomes.
const (
	Pass          Outcome = "pass"
	Fail          Outcome = "fail"
	NotApplicable Outcome = "not_applicable"
)

// Result is a policy's outcome on one trace. Witnesses are the ids of the
// actions at which it failed.
type Result struct {
	Outcome   Outcome
	Witnesses []int64
}

// Evaluate is the reference evaluator: the direct semantics of seed 000 §2.8
// and SEMANTICS.md §3–4 over a complete trace, with no cleverness, so that it
// can be trusted as the oracle the incremental monitor is tested against.
// The formula must have passed ltl.Check.
func Evaluate(f ltl.Formula, t *trace.Trace, opts *Options) Result {
	e := newEvaluator(t, opts, f)
	if e.at(f, 0) {
		if sel := e.state.Opts.AppliesWhen; sel != nil {
			applies := false
			for _, p := range t.Positions {
				applies = applies || sel.Matches(p)
			}
			if !applies {
				return Result{Outcome: NotApplicable}
			}
		}
		for _, trig := range ltl.Triggers(f) {
			for i := range e.n {
				if e.at(trig, i) {
					return Result{Outcome: Pass}
				}
			}
		}
		if len(ltl.Triggers(f)) > 0 {
			return Result{Outcome: NotApplicable}
		}
		return Result{Outcome: Pass}
	}
	var ids []int64
	for _, i := range e.witnesses(f, 0) {
		ids = append(ids, t.Positions[i].Action.ID)
	}
	return Result{Outcome: Fail, Witnesses: ids}
}

// HoldsAt reports whether f holds at position i of t (0 ≤ i ≤ len(positions);
// i = len is the empty suffix, which only the empty trace asks about).
func HoldsAt(f ltl.Formula, t *trace.Trace, opts *Options, i int) bool {
	return newEvaluator(t, opts, f).at(f, i)
}

type evaluator struct {
	t        *trace.Trace
	n        int
	state    State
	views    map[int]*State         // prefix views, by position
	runLevel map[ltl.Formula]bool   // leaves read over the whole run
	memo     map[ltl.Formula][]int8 // 0 unknown, 1 false, 2 true
}

func newEvaluator(t *trace.Trace, opts *Options, root ltl.Formula) *evaluator {
	if opts == nil {
		opts = &Options{}
	}
	return &evaluator{t: t, n: len(t.Positions), state: State{Trace: t, Opts: opts}, views: map[int]*State{}, runLevel: ltl.RunLevelLeaves(root), memo: map[ltl.Formula][]int8{}}
}

func (e *evaluator) pos(i int) *trace.Position {
	if i < e.n {
		return e.t.Positions[i]
	}
	return nil
}

// at is (τ, i) ⊨ f, memoised per node and position.
func (e *evaluator) at(f ltl.Formula, i int) bool {
	m := e.memo[f]
	if m == nil {
		m = make([]int8, e.n+1)
		e.memo[f] = m
	}
	if m[i] == 0 {
		m[i] = 1
		if e.compute(f, i) {
			m[i] = 2
		}
	}
	return m[i] == 2
}

func (e *evaluator) compute(f ltl.Formula, i int) bool {
	if _, _, ok := ltl.ScopedImplication(f); ok {
		return e.leaf(f, i)
	}
	switch f := f.(type) {
	case *ltl.Unary:
		switch f.Op {
		case ltl.OpNot:
			return !e.at(f.X, i)
		case ltl.OpG: // for all j ≥ i
			for j := i; j < e.n; j++ {
				if !e.at(f.X, j) {
					return false
				}
			}
			return true
		case ltl.OpF: // some j ≥ i
			for j := i; j < e.n; j++ {
				if e.at(f.X, j) {
					return true
				}
			}
			return false
		case ltl.OpX: // strong next
			return i+1 < e.n && e.at(f.X, i+1)
		case ltl.OpP: // some j < i
			for j := 0; j < i; j++ {
				if e.at(f.X, j) {
					return true
				}
			}
			return false
		case ltl.OpH: // all j < i
			for j := 0; j < i; j++ {
				if !e.at(f.X, j) {
					return false
				}
			}
			return true
		case ltl.OpPTarget, ltl.OpHTarget, ltl.OpPChain, ltl.OpHChain:
			exists := f.Op == ltl.OpPTarget || f.Op == ltl.OpPChain
			for j := 0; j < i; j++ {
				if !e.inScope(f.Op, j, i) {
					continue
				}
				if e.at(f.X, j) == exists {
					return exists
				}
			}
			return !exists
		}
	case *ltl.Binary:
		switch f.Op {
		case ltl.OpAnd:
			return e.at(f.L, i) && e.at(f.R, i)
		case ltl.OpOr:
			return e.at(f.L, i) || e.at(f.R, i)
		case ltl.OpImplies:
			return !e.at(f.L, i) || e.at(f.R, i)
		case ltl.OpU: // some k ≥ i with ψ, φ on [i, k)
			for k := i; k < e.n; k++ {
				if e.at(f.R, k) {
					return true
				}
				if !e.at(f.L, k) {
					return false
				}
			}
			return false
		case ltl.OpS: // some j < i with ψ, φ on (j, i)
			for j := i - 1; j >= 0; j-- {
				if e.at(f.R, j) {
					return true
				}
				if !e.at(f.L, j) {
					return false
				}
			}
			return false
		case ltl.OpSLast: // φ at some k in (last ψ before i, i)
			for k := i - 1; k >= 0; k-- {
				if e.at(f.R, k) {
					return false
				}
				if e.at(f.L, k) {
					return true
				}
			}
			return false
		}
	}
	return e.leaf(f, i)
}

// leaf evaluates a state leaf at i: a run-level leaf (ltl.RunLevelLeaves)
// over the whole run, any other over the run as it stood when position i was
// sealed.
func (e *evaluator) leaf(f ltl.Formula, i int) bool {
	p := e.pos(i)
	if p == nil || e.runLevel[f] {
		return e.state.holds(f, p, nil, nil)
	}
	if e.views[i] == nil {
		e.views[i] = &State{Trace: e.t.Prefix(p), Opts: e.state.Opts}
	}
	return e.views[i].holds(f, p, nil, nil)
}

// inScope reports whether position j is a witness candidate for a scoped
// operator at position i: j shares a target with i (P_target, H_target), or
// j produced an artifact in i's lineage (P_chain, H_chain).
func (e *evaluator) inScope(op ltl.UnaryOp, j, i int) bool {
	pj, pi := e.pos(j), e.pos(i)
	if pi == nil {
		return false
	}
	if op == ltl.OpPTarget || op == ltl.OpHTarget {
		for _, a := range pj.TargetSet() {
			for _, b := range pi.TargetSet() {
				if a == b {
					return true
				}
			}
		}
		return false
	}
	for _, a := range pi.Lineage() {
		if a.Producer == pj {
			return true
		}
	}
	return false
}

// witnesses returns the positions that show why f fails at i: for G φ the
// positions where φ fails, for a conjunction those of its failing parts, none
// for what fails for want of a future position (F, U, X) or of the run as a
// whole (a run-level leaf), and i itself otherwise.
func (e *evaluator) witnesses(f ltl.Formula, i int) []int {
	switch f := f.(type) {
	case *ltl.Unary:
		if f.Op == ltl.OpG {
			var out []int
			for j := i; j < e.n; j++ {
				if !e.at(f.X, j) {
					out = append(out, j)
				}
			}
			return out
		}
		if f.Op == ltl.OpF || f.Op == ltl.OpX {
			return nil
		}
	case *ltl.Binary:
		switch f.Op {
		case ltl.OpAnd:
			var out []int
			for _, c := range []ltl.Formula{f.L, f.R} {
				if !e.at(c, i) {
					out = append(out, e.witnesses(c, i)...)
				}
			}
			return out
		case ltl.OpU:
			return nil
		}
	}
	if i < e.n && !e.runLevel[f] {
		return []int{i}
	}
	return nil
}
