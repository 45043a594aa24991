package monitor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ponens/ponens/policy/ltl"
)

// kind is the kind of an obligation node.
type kind uint8

// Obligation kinds. Formulas are kept in negation normal form, so that
// negation only sits on literals: ¬G = F¬, ¬X = WX¬, ¬(φ U ψ) = ¬φ R ¬ψ.
const (
	kTrue  kind = iota
	kFalse      // violated
	kLit        // a proposition of the current position (state leaf or past operator)
	kDef        // a position-independent leaf: known when the run ends
	kAnd
	kOr
	kG
	kF
	kU  // φ U ψ (strong)
	kR  // φ R ψ (release, the dual of U)
	kX  // X φ (strong) or WX φ (weak): φ at the next position
	kNx // the residue of X after a step: φ at the first position of what follows
)

// ob is an interned obligation: what the rest of the run must satisfy.
// Interning makes equal obligations the same pointer, so residues converge
// and transitions can be cached by pointer.
type ob struct {
	id     int32
	kind   kind
	neg    bool // kLit, kDef
	strong bool // kX, kNx
	k      int  // proposition or deferred-leaf index
	kids   []*ob
	origin ltl.Node // the subformula this came from, for cause.subformula

	invariant bool // a conjunction of G and R only: nothing is open
	hasDef    bool

	// table and next cache transitions by the proposition values, as a
	// bit set (Engine.transition).
	table []*ob
	next  map[uint64]*ob
}

// interner makes obligations unique. It is owned by one Engine and is not
// safe for concurrent use.
type interner struct {
	table       map[string]*ob
	next        int32
	true, false *ob
}

func newInterner() *interner {
	in := &interner{table: map[string]*ob{}}
	in.true = in.make(&ob{kind: kTrue})
	in.false = in.make(&ob{kind: kFalse})
	return in
}

func (in *interner) make(o *ob) *ob {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%t/%t/%d/%p", o.kind, o.neg, o.strong, o.k, o.origin)
	for _, c := range o.kids {
		fmt.Fprintf(&b, ",%d", c.id)
	}
	key := b.String()
	if got, ok := in.table[key]; ok {
		return got
	}
	o.id = in.next
	in.next++
	switch o.kind {
	case kG, kR:
		o.invariant = true
	case kAnd:
		o.invariant = true
		for _, c := range o.kids {
			o.invariant = o.invariant && c.invariant
		}
	}
	o.hasDef = o.kind == kDef
	for _, c := range o.kids {
		o.hasDef = o.hasDef || c.hasDef
	}
	o.invariant = o.invariant && !o.hasDef
	in.table[key] = o
	return o
}

func (in *interner) lit(k int, neg bool, origin ltl.Node) *ob {
	return in.make(&ob{kind: kLit, k: k, neg: neg, origin: origin})
}

func (in *interner) def(k int, neg bool, origin ltl.Node) *ob {
	return in.make(&ob{kind: kDef, k: k, neg: neg, origin: origin})
}

func (in *interner) unary(kd kind, strong bool, x *ob, origin ltl.Node) *ob {
	return in.make(&ob{kind: kd, strong: strong, kids: []*ob{x}, origin: origin})
}

func (in *interner) binary(kd kind, l, r *ob, origin ltl.Node) *ob {
	return in.make(&ob{kind: kd, kids: []*ob{l, r}, origin: origin})
}

// junction builds an n-ary ∧ (and true) or ∨ with the usual simplifications:
// units dropped, zeros absorbing, nested junctions of the same kind
// flattened, duplicates removed, children ordered by id.
func (in *interner) junction(and bool, kids []*ob, origin ltl.Node) *ob {
	unit, zero, kd := in.true, in.false, kAnd
	if !and {
		unit, zero, kd = in.false, in.true, kOr
	}
	flat := make([]*ob, 0, len(kids))
	for _, c := range kids {
		switch {
		case c == zero:
			return zero
		case c == unit:
		case c.kind == kd:
			flat = append(flat, c.kids...)
		default:
			flat = append(flat, c)
		}
	}
	if len(flat) == 0 {
		return unit
	}
	sort.Slice(flat, func(i, j int) bool { return flat[i].id < flat[j].id })
	out := flat[:1]
	for _, c := range flat[1:] {
		if c != out[len(out)-1] {
			out = append(out, c)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	// A literal and its negation: p ∧ ¬p = ⊥, p ∨ ¬p = ⊤.
	for i, a := range out {
		for _, b := range out[i+1:] {
			if a.kind == kLit && b.kind == kLit && a.k == b.k && a.neg != b.neg {
				return zero
			}
		}
	}
	return in.make(&ob{kind: kd, kids: out, origin: origin})
}

// progress is the obligation on the rest of the run after a position whose
// propositions have the values vals.
func (in *interner) progress(o *ob, vals []bool) *ob {
	switch o.kind {
	case kTrue, kFalse, kDef:
		return o
	case kLit:
		if vals[o.k] != o.neg {
			return in.true
		}
		return in.false
	case kAnd, kOr:
		kids := make([]*ob, len(o.kids))
		for i, c := range o.kids {
			kids[i] = in.progress(c, vals)
		}
		return in.junction(o.kind == kAnd, kids, o.origin)
	case kG: // φ now, and G φ from the next position
		return in.junction(true, []*ob{in.progress(o.kids[0], vals), o}, o.origin)
	case kF:
		return in.junction(false, []*ob{in.progress(o.kids[0], vals), o}, o.origin)
	case kU: // ψ now, or φ now and φ U ψ from the next position
		l, r := in.progress(o.kids[0], vals), in.progress(o.kids[1], vals)
		return in.junction(false, []*ob{r, in.junction(true, []*ob{l, o}, o.origin)}, o.origin)
	case kR: // ψ now, and φ now or φ R ψ from the next position
		l, r := in.progress(o.kids[0], vals), in.progress(o.kids[1], vals)
		return in.junction(true, []*ob{r, in.junction(false, []*ob{l, o}, o.origin)}, o.origin)
	case kX:
		return in.unary(kNx, o.strong, o.kids[0], o.origin)
	case kNx:
		return in.progress(o.kids[0], vals)
	}
	panic("monitor: unknown obligation kind")
}

// endValue is the value of o on the empty rest of a finished run: what
// remains of G and R holds, of F, U and strong X does not; def gives the
// values of position-independent leaves.
func endValue(o *ob, def func(k int) bool) bool {
	switch o.kind {
	case kTrue, kG, kR:
		return true
	case kFalse, kF, kU, kLit:
		return false
	case kDef:
		return def(o.k) != o.neg
	case kAnd:
		for _, c := range o.kids {
			if !endValue(c, def) {
				return false
			}
		}
		return true
	case kOr:
		for _, c := range o.kids {
			if endValue(c, def) {
				return true
			}
		}
		return false
	case kX, kNx:
		return !o.strong
	}
	panic("monitor: unknown obligation kind")
}

// blame returns the subformula responsible when progressing o with vals
// gives ⊥: the false literal, the failing conjunct, the consequent of a
// broken implication.
func (in *interner) blame(o *ob, vals []bool) ltl.Node {
	switch o.kind {
	case kAnd:
		for _, c := range o.kids {
			if in.progress(c, vals) == in.false {
				return in.blame(c, vals)
			}
		}
	case kOr:
		if imp, ok := o.origin.(*ltl.Binary); ok && imp.Op == ltl.OpImplies {
			if c := consequent(imp, o.kids); c != nil {
				return in.blame(c, vals)
			}
			return imp.R
		}
	case kG, kNx:
		return in.blame(o.kids[0], vals)
	case kR:
		return in.blame(o.kids[1], vals)
	}
	return o.origin
}

// blameEnd is blame for a run that ended with endValue(o) false.
func blameEnd(o *ob, def func(int) bool) ltl.Node {
	switch o.kind {
	case kAnd:
		for _, c := range o.kids {
			if !endValue(c, def) {
				return blameEnd(c, def)
			}
		}
	case kOr:
		if imp, ok := o.origin.(*ltl.Binary); ok && imp.Op == ltl.OpImplies {
			if c := consequent(imp, o.kids); c != nil {
				return blameEnd(c, def)
			}
			return imp.R
		}
	}
	return o.origin
}

// consequent returns the one part of an implication in normal form that
// came from its right-hand side, or nil when that side was a disjunction
// merged into the implication's (then the right-hand side as a whole is to
// blame).
func consequent(imp *ltl.Binary, kids []*ob) *ob {
	r := imp.R.Pos()
	var found *ob
	for _, c := range kids {
		if s := start(c.origin); s >= r.Start && s < r.End {
			if found != nil {
				return nil
			}
			found = c
		}
	}
	return found
}

func start(n ltl.Node) int {
	if n == nil {
		return -1
	}
	return n.Pos().Start
}

// openObligation returns the part of a pending obligation that is still open
// (the first that is not an invariant), for cause.subformula.
func openObligation(o *ob) *ob {
	if o.kind == kAnd {
		for _, c := range o.kids {
			if !c.invariant {
				return openObligation(c)
			}
		}
	}
	return o
}
