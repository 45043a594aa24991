package ltl

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// Level is a language level of seed 000 §3: how much machinery a formula
// needs.
type Level int

// Language levels, from least to most machinery.
const (
	PureTemporal   Level = iota // future/past operators over atomic propositions
	ScopedTemporal              // adds P_target, P_chain, H_target, H_chain
	Structural                  // adds quantifiers, sets, lineage, counting
)

var levelNames = [...]string{"pure_temporal", "scoped_temporal", "structural"}

func (l Level) String() string { return levelNames[l] }

// ParseLevel reads a language_level value.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if n == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown language level %q (want pure_temporal, scoped_temporal or structural)", s)
}

// Classify computes the language level a formula needs.
func Classify(f Formula) Level {
	level := PureTemporal
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Unary:
			if n.Op.IsScoped() && level < ScopedTemporal {
				level = ScopedTemporal
			}
		case *Compare:
			if !isFieldPredicate(n) {
				level = Structural
			}
		case *Quantified, *Member, *Count, *Call, *SetLit, *Comprehension:
			level = Structural
		}
		return true
	})
	return level
}

// isFieldPredicate reports whether c is a field predicate of seed 000 §2.5
// (name ≠ ∅ or name = ∅ on a field of the current action), which is an
// atomic proposition rather than a structural comparison.
func isFieldPredicate(c *Compare) bool {
	id, isIdent := c.L.(*Ident)
	_, isEmpty := c.R.(*EmptySet)
	return isIdent && isEmpty && (c.Op == CmpEq || c.Op == CmpNeq) &&
		!Collections[id.Name] && !IsCurrentAction(id.Name) && !isTypeName(id.Name)
}

// Collections are the names a quantifier or comprehension can range over
// without a function call; each denotes the whole run's collection.
var Collections = map[string]bool{"actions": true, "artifacts": true, "residuals": true, "telemetry": true, "files_modified": true}

// Strengths ranks evidence strengths, strongest first (SEMANTICS.md §1).
var Strengths = []string{"proof", "sat", "tests", "static_analysis", "attested"}

// Check runs the compile stages over a parsed formula and returns every
// problem found, sorted by position. The stages, in order:
//
//  1. resolve: every call names a known function, every attribution argument
//     is well formed (strength_at_least takes a known strength);
//  2. scope: temporal operators appear only where the evaluator can evaluate
//     them: not inside a quantifier body, a set comprehension guard, count(…)
//     or the argument of a type call T(φ);
//  3. terms: quantifier and comprehension domains are set-valued; ordering
//     comparisons are between orderable values.
func Check(src string, f Formula) []*Error {
	var errs []*Error
	add := func(n Node, code string, format string, args ...any) {
		errs = append(errs, newError(src, n.Pos().Start, code, ErrUnsupported, format, args...))
	}
	for _, stage := range []func(Formula, func(Node, string, string, ...any)){checkResolve, checkScope, checkTerms} {
		stage(f, add)
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Offset < errs[j].Offset })
	return errs
}

func checkResolve(f Formula, add func(Node, string, string, ...any)) {
	Walk(f, func(n Node) bool {
		if a, ok := n.(*Attribution); ok && a.Func == "strength_at_least" {
			arg := AttributionArg(a)
			known := false
			for _, s := range Strengths {
				known = known || s == arg
			}
			if !known {
				add(a, "unknown-strength", "strength_at_least(%s): unknown evidence strength (want one of proof, sat, tests, static_analysis, attested)", arg)
			}
		}
		return true
	})
}

// AttributionArg returns the argument an attribution atom tests. The spec's
// two-argument form names the action first (strength_at_least(a, proof)); the
// action is always the current one, so only the last argument counts.
func AttributionArg(a *Attribution) string {
	arg := a.Arg
	if a.Func != "conforms_to" {
		for i := len(arg) - 1; i >= 0; i-- {
			if arg[i] == ',' {
				arg = arg[i+1:]
				break
			}
		}
	}
	for len(arg) > 0 && (arg[0] == ' ' || arg[0] == '\t') {
		arg = arg[1:]
	}
	return arg
}

func checkScope(f Formula, add func(Node, string, string, ...any)) {
	var inState func(n Node, where string)
	inState = func(n Node, where string) {
		Walk(n, func(m Node) bool {
			switch m := m.(type) {
			case *Unary:
				if m.Op != OpNot {
					add(m, "unsupported", "temporal operator %s inside %s is not supported: those are evaluated at a single position", m.Op, where)
					return false
				}
			case *Binary:
				if m.Op.IsTemporal() {
					add(m, "unsupported", "temporal operator %s inside %s is not supported: those are evaluated at a single position", m.Op, where)
					return false
				}
			}
			return true
		})
	}
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Quantified:
			inState(n.Body, "a quantifier body")
		case *Comprehension:
			inState(n.Guard, "a set comprehension")
		case *Count:
			inState(n.X, "count(…)")
		case *TypeCall:
			inState(n.Arg, "a type call "+n.Type+"(…)")
		}
		return true
	})
}

func checkTerms(f Formula, add func(Node, string, string, ...any)) {
	domain := func(t Term, what string) {
		switch t := t.(type) {
		case *Num, *Str, *EmptySet, *Count:
			add(t, "bad-domain", "%s ranges over %s, which is not a set", what, Print(t))
		}
	}
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Quantified:
			if n.Domain != nil {
				domain(n.Domain, "the quantifier")
			}
		case *Comprehension:
			if n.Domain != nil {
				domain(n.Domain, "the set comprehension")
			}
		case *Compare:
			if n.Op != CmpEq && n.Op != CmpNeq {
				for _, side := range []Term{n.L, n.R} {
					switch side.(type) {
					case *SetLit, *Comprehension, *EmptySet, *Call:
						add(side, "bad-compare", "%s cannot be ordered with %s", Print(side), n.Op)
					}
				}
			}
		}
		return true
	})
}

// Triggers returns the triggers of a formula of the shape G(φ → ψ), or of a
// conjunction of such: the φs. A policy whose triggers never hold on a trace
// it passes is not_applicable there (seed 000 §5). Triggers with a future
// operator are not counted (their value at a position is not known when the
// position is seen), nor are formulas of any other shape: those return nil.
func Triggers(f Formula) []Formula {
	switch f := f.(type) {
	case *Unary:
		if f.Op != OpG {
			return nil
		}
		if imp, ok := f.X.(*Binary); ok && imp.Op == OpImplies && !HasFuture(imp.L) && len(RunLevelLeaves(&Unary{Op: OpG, X: imp.L})) == 0 {
			return []Formula{imp.L}
		}
	case *Binary:
		if f.Op == OpAnd {
			l, r := Triggers(f.L), Triggers(f.R)
			if l != nil && r != nil {
				return append(l, r...)
			}
		}
	}
	return nil
}

// RunLevelLeaves returns the leaves of f that are facts about the whole run,
// read over the complete run (a monitor learns their value only when the run
// ends): end_event wherever it stands, and position-independent leaves that
// stand outside every temporal operator (¬∃ r ∈ residuals . …, a top-level
// count(EditFile) ≤ 20). Every other leaf reads the run as it stood when its
// position was sealed, so under G a count or a collection covers what has
// happened so far.
func RunLevelLeaves(f Formula) map[Formula]bool {
	out := map[Formula]bool{}
	var visit func(g Formula, temporal bool)
	visit = func(g Formula, temporal bool) {
		switch g := g.(type) {
		case *Bool:
		case *Unary:
			visit(g.X, temporal || g.Op != OpNot)
		case *Binary:
			if _, _, ok := ScopedImplication(g); ok {
				return // one state leaf that reads its position
			}
			t := temporal || g.Op.IsTemporal()
			visit(g.L, t)
			visit(g.R, t)
		default:
			if a, ok := g.(*Atom); ok && a.Name == "end_event" || !temporal && PositionIndependent(g) {
				out[g] = true
			}
		}
	}
	visit(f, false)
	return out
}

// HasFuture reports whether f contains a future-time operator (G F X U).
func HasFuture(f Formula) bool {
	found := false
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Unary:
			found = found || n.Op.IsFuture()
		case *Binary:
			found = found || n.Op == OpU
		}
		return !found
	})
	return found
}

// HasTemporal reports whether f contains any temporal operator.
func HasTemporal(f Formula) bool {
	found := false
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Unary:
			found = found || n.Op != OpNot
		case *Binary:
			found = found || n.Op.IsTemporal()
		}
		return !found
	})
	return found
}

// IsCurrentAction reports whether an unbound name in term position denotes the
// current action: a single letter, or self. Any other unbound lowercase name
// is a field of the current action.
func IsCurrentAction(name string) bool {
	return utf8.RuneCountInString(name) == 1 || name == "self"
}

// PositionIndependent reports whether the state leaf f does not refer to the
// position it is evaluated at: no atom of the action, no current-action name
// or field (count(EditFile) ≤ 3, ¬∃ r ∈ residuals . …, end_event).
func PositionIndependent(f Formula) bool {
	independent := true
	var visit func(n Node, bound map[string]bool)
	visit = func(n Node, bound map[string]bool) {
		if !independent {
			return
		}
		switch n := n.(type) {
		case *Atom:
			if n.Name != "start_event" && n.Name != "end_event" {
				independent = false
			}
			return
		case *TypeCall, *Attribution:
			independent = false
			return
		case *Count:
			return // its formula is evaluated at every position, not this one
		case *Ident:
			if !bound[n.Name] && !Collections[n.Name] && !isTypeName(n.Name) {
				independent = false
			}
			return
		case *Call:
			if id, ok := n.Args[0].(*Ident); ok && n.Func == "ancestors" && id.Name == "derived_from" && !bound[id.Name] {
				independent = false
				return
			}
		case *Compare:
			visitOperands(n.L, n.R, bound, visit)
			return
		case *Member:
			visitOperands(n.Elem, n.Set, bound, visit)
			return
		case *Quantified:
			if n.Domain != nil {
				visit(n.Domain, bound)
			}
			visit(n.Body, with(bound, n.Var))
			return
		case *Comprehension:
			if n.Domain != nil {
				visit(n.Domain, bound)
			}
			inner := with(bound, n.Var)
			visit(n.Expr, inner)
			visit(n.Guard, inner)
			return
		}
		for _, c := range Children(n) {
			visit(c, bound)
		}
	}
	visit(f, map[string]bool{})
	return independent
}

// visitOperands visits both sides of a comparison or membership test,
// skipping a side that is a string constant.
func visitOperands(l, r Term, bound map[string]bool, visit func(Node, map[string]bool)) {
	isBound := func(name string) bool { return bound[name] }
	if !StringConstant(l, r, isBound) {
		visit(l, bound)
	}
	if !StringConstant(r, l, isBound) {
		visit(r, bound)
	}
}

// ActionFields are the fields every action may carry (the reference trace
// format's, and a tool call's), plus target: a bare name among them compared
// with a bound variable's field reads the current action's field, never a
// constant.
var ActionFields = map[string]bool{
	"id": true, "type": true, "category": true, "label": true, "rationale": true, "detail": true,
	"result_summary": true, "status": true, "inputs": true, "outputs": true, "evidence": true,
	"request": true, "timestamp": true, "capability": true, "tool": true, "connector": true,
	"action": true, "reversibility": true, "risk": true, "worker": true, "specialist": true,
	"task": true, "payload": true, "constraints": true, "requester": true, "artifacts": true,
	"target": true, "index": true, "position": true,
}

// StringConstant reports whether t, on one side of =, ≠ or ∈ with other on
// the other side, is a lowercase name read as a string constant: no
// quantifier or comprehension binds it, it names no collection, not the
// current action and none of the action fields (ActionFields: target stays
// the current action's target), and other is a field of a bound variable
// (∀ s ∈ telemetry . s.status = recorded). bound says which names are bound
// where t occurs.
func StringConstant(t, other Term, bound func(string) bool) bool {
	id, ok := t.(*Ident)
	if !ok || bound(id.Name) || Collections[id.Name] || IsCurrentAction(id.Name) || isTypeName(id.Name) || ActionFields[id.Name] {
		return false
	}
	root := other
	for {
		f, ok := root.(*Field)
		if !ok {
			break
		}
		root = f.X
	}
	if _, ok := other.(*Field); !ok {
		return false
	}
	r, ok := root.(*Ident)
	return ok && bound(r.Name)
}

// ScopedImplication reports whether f is T → ψ with T a type atom and ψ a
// state formula (no temporal operator, no end_event or start_event): ψ is
// then read of each thing T matched at the position (the action when its
// type is T, each artifact of type T it produced), its bare names resolving
// first against the matched artifact. Both evaluators treat such an
// implication as one state leaf.
func ScopedImplication(f Formula) (typ string, body Formula, ok bool) {
	b, isBin := f.(*Binary)
	if !isBin || b.Op != OpImplies {
		return "", nil, false
	}
	a, isAtom := b.L.(*Atom)
	if !isAtom || !isTypeName(a.Name) {
		return "", nil, false
	}
	state := true
	Walk(b.R, func(n Node) bool {
		switch n := n.(type) {
		case *Unary:
			state = state && n.Op == OpNot
		case *Binary:
			state = state && !n.Op.IsTemporal()
		case *Atom:
			state = state && n.Name != "end_event" && n.Name != "start_event"
		}
		return state
	})
	if !state {
		return "", nil, false
	}
	return a.Name, b.R, true
}

func with(bound map[string]bool, name string) map[string]bool {
	out := make(map[string]bool, len(bound)+1)
	for k, v := range bound {
		out[k] = v
	}
	out[name] = true
	return out
}

// ReadsActions reports whether f reads the run's actions or telemetry as
// collections: count(…), a quantifier without a domain (which ranges over
// the actions), or the names actions and telemetry. A monitor keeps a run's
// positions only for rules that do.
func ReadsActions(f Formula) bool {
	found := false
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Count:
			found = true
		case *Quantified:
			found = found || n.Domain == nil
		case *Ident:
			found = found || n.Name == "actions" || n.Name == "telemetry"
		}
		return !found
	})
	return found
}

// ReadsActionsByOutputs reports whether f reads the run's actions only
// through quantifiers an index of the actions' outputs answers: ∃ or ∃!
// without a domain whose body has a conjunct x ∈ outputs(v) (v the
// quantified variable, x free of it) and otherwise uses v only in
// outputs(v) and in comparisons of two names (b < a). Such a quantifier
// reads of an action only its place, its id and its outputs, so a monitor
// need not keep the actions themselves (trace.Builder.IndexProducers). It
// is false when f reads the actions otherwise, and when it does not read
// them at all.
func ReadsActionsByOutputs(f Formula) bool {
	ok, quantifiers := true, 0
	Walk(f, func(n Node) bool {
		switch n := n.(type) {
		case *Count:
			ok = false
		case *Ident:
			ok = ok && n.Name != "actions" && n.Name != "telemetry"
		case *Quantified:
			if n.Domain == nil {
				quantifiers++
				ok = ok && byOutputs(n)
			}
		}
		return ok
	})
	return ok && quantifiers > 0
}

// byOutputs reports whether q is a quantifier over the actions that an
// output index answers (ReadsActionsByOutputs).
func byOutputs(q *Quantified) bool {
	if q.Q == Forall {
		return false
	}
	indexed := false
	for _, c := range conjunctsOf(q.Body) {
		if m, ok := c.(*Member); ok && !m.Negated && isOutputsOf(m.Set, q.Var) && !mentions(m.Elem, q.Var) {
			indexed = true
		}
	}
	return indexed && onlyPlaceAndOutputs(q.Body, q.Var)
}

func conjunctsOf(f Formula) []Formula {
	if b, ok := f.(*Binary); ok && b.Op == OpAnd {
		return append(conjunctsOf(b.L), conjunctsOf(b.R)...)
	}
	return []Formula{f}
}

// isOutputsOf reports whether n is outputs(v).
func isOutputsOf(n Node, v string) bool {
	c, ok := n.(*Call)
	if !ok || c.Func != "outputs" || len(c.Args) != 1 {
		return false
	}
	id, ok := c.Args[0].(*Ident)
	return ok && id.Name == v
}

// mentions reports whether the identifier v occurs in n.
func mentions(n Node, v string) bool {
	found := false
	Walk(n, func(m Node) bool {
		if id, ok := m.(*Ident); ok && id.Name == v {
			found = true
		}
		return !found
	})
	return found
}

// onlyPlaceAndOutputs reports whether n uses v only as outputs(v) and as an
// operand of a comparison of two names, and does not bind v again.
func onlyPlaceAndOutputs(n Node, v string) bool {
	ok := true
	Walk(n, func(m Node) bool {
		switch m := m.(type) {
		case *Call:
			if isOutputsOf(m, v) {
				return false
			}
		case *Compare:
			_, l := m.L.(*Ident)
			_, r := m.R.(*Ident)
			if l && r {
				return false
			}
		case *Quantified:
			ok = ok && m.Var != v
		case *Comprehension:
			ok = ok && m.Var != v
		case *Ident:
			ok = ok && m.Name != v
		}
		return ok
	})
	return ok
}
