package monitor

import (
	"fmt"

	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// propKind is how a proposition gets its value at a position.
type propKind uint8

const (
	propLeaf   propKind = iota // a state leaf, evaluated on the run as it stands
	propPast                   // P, H, S, S_last: a summary of the previous position
	propTarget                 // P_target, H_target: a summary per target
	propChain                  // P_chain, H_chain: a summary per artifact lineage
)

// prop is one proposition of a rule: its value is computed once per position.
type prop struct {
	kind  propKind
	leaf  int         // propLeaf: index in the engine's leaf table
	op    ltl.Formula // the past operator node
	a, b  bexpr       // arguments of past operators (b for S and S_last)
	slot  int         // first state bit (propPast: 3 bits) or map index (scoped)
	exist bool        // P_target / P_chain (true) or H_target / H_chain (false)
}

// bexpr is a boolean expression over a rule's propositions: the argument of a
// past operator, or a not_applicable trigger.
type bexpr struct {
	op   byte // 'l' literal, '!', '&', '|', 't', 'f'
	k    int
	kids []bexpr
}

func (e bexpr) eval(vals []bool) bool {
	switch e.op {
	case 'l':
		return vals[e.k]
	case '!':
		return !e.kids[0].eval(vals)
	case '&':
		return e.kids[0].eval(vals) && e.kids[1].eval(vals)
	case '|':
		return e.kids[0].eval(vals) || e.kids[1].eval(vals)
	case 't':
		return true
	}
	return false
}

// program is one rule compiled for incremental evaluation.
type program struct {
	rule      *ruleset.Rule
	opts      *eval.Options
	mode      schema.Mode
	text      string
	spans     map[ltl.Node]ltl.Range
	props     []prop        // in evaluation order: arguments before operators
	deferred  []ltl.Formula // position-independent leaves
	init      *ob
	triggers  []bexpr
	pastBits  int // bits of past state (3 per propPast)
	scoped    int // scoped propositions (one map each)
	propIndex map[string]int
	runLevel  map[ltl.Formula]bool
	// capability marks a POLICY.md rule: no formula; the authorization
	// engine judges it on tool calls.
	capability bool
	leaves     *leafTable
}

// leafTable holds every distinct state leaf of an engine's rules, compiled
// once: rules that share a leaf (GitCommit, completed, …) share its value at
// each position, computed once.
type leafTable struct {
	fns    []eval.Leaf
	states []eval.State // evaluation state per leaf (its rule's options)
	index  map[string]int
	vals   []bool
	stamp  []uint64 // the position serial vals[k] was computed for
}

func (t *leafTable) add(f ltl.Formula, opts *eval.Options) int {
	key := opts.Reasoner + "\x00" + ltl.Sexpr(f)
	if k, ok := t.index[key]; ok {
		return k
	}
	t.fns = append(t.fns, eval.CompileLeaf(f, opts))
	t.states = append(t.states, eval.State{Opts: opts})
	t.vals = append(t.vals, false)
	t.stamp = append(t.stamp, 0)
	t.index[key] = len(t.fns) - 1
	return len(t.fns) - 1
}

// value is leaf k at p, computed at most once per position serial.
func (t *leafTable) value(k int, serial uint64, tr *trace.Trace, p *trace.Position) bool {
	if t.stamp[k] != serial {
		st := &t.states[k]
		st.Trace = tr
		t.vals[k], t.stamp[k] = t.fns[k](st, p), serial
	}
	return t.vals[k]
}

// CompileError says why a rule cannot be monitored incrementally.
type CompileError struct {
	RuleID string
	Node   ltl.Node
	Msg    string
}

func (e *CompileError) Error() string { return fmt.Sprintf("rule %s: %s", e.RuleID, e.Msg) }

// compile turns a checked rule into a program using the engine's interner.
// The fragment it accepts: future operators over past operators and state
// leaves; past operators over past operators and state leaves. A past
// operator over a future formula (P(F a)) or over a run-level leaf (end_event) is a CompileError: the reference evaluator and
// `ponens eval` accept them, the monitor does not.
func compile(in *interner, leaves *leafTable, r *ruleset.Rule, opts *eval.Options, mode schema.Mode) (prog *program, err error) {
	if r.Capability != nil {
		return &program{rule: r, opts: opts, mode: mode, text: r.Text, init: in.true, capability: true}, nil
	}
	text, spans := ltl.PrintSpans(r.Formula)
	p := &program{rule: r, opts: opts, mode: mode, text: text, propIndex: map[string]int{}, runLevel: ltl.RunLevelLeaves(r.Formula), leaves: leaves}
	// Spans are keyed by node; the printer saw the same nodes as the parser.
	p.spans = spans
	defer func() {
		if x := recover(); x != nil {
			ce, ok := x.(*CompileError)
			if !ok {
				panic(x)
			}
			prog, err = nil, ce
		}
	}()
	p.init = p.build(in, r.Formula, false, nil)
	for _, trig := range ltl.Triggers(r.Formula) {
		p.triggers = append(p.triggers, p.bool(trig))
	}
	return p, nil
}

func (p *program) fail(n ltl.Node, format string, args ...any) {
	panic(&CompileError{RuleID: p.rule.ID, Node: n, Msg: fmt.Sprintf(format, args...)})
}

// build translates f (negated when neg) into negation normal form. notNode is
// the ¬ node directly above f, if any, so that a negated leaf is blamed as
// written (¬DeleteFile rather than DeleteFile).
func (p *program) build(in *interner, f ltl.Formula, neg bool, notNode ltl.Node) *ob {
	origin := ltl.Node(f)
	if notNode != nil {
		origin = notNode
	}
	if _, body, ok := ltl.ScopedImplication(f); ok {
		if notNode == nil {
			origin = body // T → ψ fails where ψ fails of what T matched: blame ψ
		}
		return in.lit(p.leafProp(f), neg, origin)
	}
	switch f := f.(type) {
	case *ltl.Bool:
		if f.Value != neg {
			return in.true
		}
		return in.false
	case *ltl.Unary:
		switch f.Op {
		case ltl.OpNot:
			return p.build(in, f.X, !neg, f)
		case ltl.OpG, ltl.OpF:
			x := p.build(in, f.X, neg, nil)
			if (f.Op == ltl.OpG) != neg {
				return in.unary(kG, false, x, origin)
			}
			return in.unary(kF, false, x, origin)
		case ltl.OpX:
			return in.unary(kX, !neg, p.build(in, f.X, neg, nil), origin)
		}
		return in.lit(p.pastProp(f), neg, origin)
	case *ltl.Binary:
		switch f.Op {
		case ltl.OpAnd, ltl.OpOr:
			l, r := p.build(in, f.L, neg, nil), p.build(in, f.R, neg, nil)
			return in.junction((f.Op == ltl.OpAnd) != neg, []*ob{l, r}, origin)
		case ltl.OpImplies: // ¬φ ∨ ψ
			l, r := p.build(in, f.L, !neg, nil), p.build(in, f.R, neg, nil)
			return in.junction(neg, []*ob{l, r}, origin)
		case ltl.OpU:
			l, r := p.build(in, f.L, neg, nil), p.build(in, f.R, neg, nil)
			if neg {
				return in.binary(kR, l, r, origin)
			}
			return in.binary(kU, l, r, origin)
		}
		return in.lit(p.pastProp(f), neg, origin)
	}
	if p.runLevel[f] {
		p.deferred = append(p.deferred, f)
		return in.def(len(p.deferred)-1, neg, origin)
	}
	return in.lit(p.leafProp(f), neg, origin)
}

// bool compiles a past-or-state formula into a bexpr.
func (p *program) bool(f ltl.Formula) bexpr {
	if _, _, ok := ltl.ScopedImplication(f); ok {
		return bexpr{op: 'l', k: p.leafProp(f)}
	}
	switch f := f.(type) {
	case *ltl.Bool:
		if f.Value {
			return bexpr{op: 't'}
		}
		return bexpr{op: 'f'}
	case *ltl.Unary:
		switch {
		case f.Op == ltl.OpNot:
			return bexpr{op: '!', kids: []bexpr{p.bool(f.X)}}
		case f.Op.IsPast():
			return bexpr{op: 'l', k: p.pastProp(f)}
		}
		p.fail(f, "the future operator %s is inside a past operator or a trigger; the monitor evaluates past operators from what it has seen, so it cannot look ahead there", f.Op)
	case *ltl.Binary:
		switch f.Op {
		case ltl.OpAnd, ltl.OpOr:
			op := byte('&')
			if f.Op == ltl.OpOr {
				op = '|'
			}
			return bexpr{op: op, kids: []bexpr{p.bool(f.L), p.bool(f.R)}}
		case ltl.OpImplies:
			return bexpr{op: '|', kids: []bexpr{{op: '!', kids: []bexpr{p.bool(f.L)}}, p.bool(f.R)}}
		case ltl.OpS, ltl.OpSLast:
			return bexpr{op: 'l', k: p.pastProp(f)}
		}
		p.fail(f, "the future operator U is inside a past operator or a trigger; the monitor cannot look ahead there")
	}
	if p.runLevel[f] {
		p.fail(f, "%s is a fact about the whole run (known only when it ends) and cannot be used inside a past operator", ltl.Print(f))
	}
	return bexpr{op: 'l', k: p.leafProp(f)}
}

func (p *program) leafProp(f ltl.Formula) int {
	key := "leaf " + ltl.Sexpr(f)
	if k, ok := p.propIndex[key]; ok {
		return k
	}
	p.props = append(p.props, prop{kind: propLeaf, leaf: p.leaves.add(f, p.opts)})
	p.propIndex[key] = len(p.props) - 1
	return len(p.props) - 1
}

func (p *program) pastProp(f ltl.Formula) int {
	key := "past " + ltl.Sexpr(f)
	if k, ok := p.propIndex[key]; ok {
		return k
	}
	pr := prop{op: f}
	switch f := f.(type) {
	case *ltl.Unary:
		pr.a = p.bool(f.X)
		switch f.Op {
		case ltl.OpP, ltl.OpH:
			pr.kind = propPast
		case ltl.OpPTarget, ltl.OpHTarget:
			pr.kind, pr.exist = propTarget, f.Op == ltl.OpPTarget
		case ltl.OpPChain, ltl.OpHChain:
			pr.kind, pr.exist = propChain, f.Op == ltl.OpPChain
		}
	case *ltl.Binary:
		pr.kind = propPast
		pr.a, pr.b = p.bool(f.L), p.bool(f.R)
	}
	switch pr.kind {
	case propPast:
		pr.slot = p.pastBits
		p.pastBits += 3
	default:
		pr.slot = p.scoped
		p.scoped++
	}
	p.props = append(p.props, pr)
	p.propIndex[key] = len(p.props) - 1
	return len(p.props) - 1
}

// subformula returns the printed text of n within the rule, or the whole rule
// when n is nil or not part of it.
func (p *program) subformula(n ltl.Node) string {
	if r, ok := p.spans[n]; ok && n != nil {
		return p.text[r.Start:r.End]
	}
	return p.text
}
