package ltl

import (
	"strconv"
	"strings"
)

// Precedence levels, loosest first. A quantifier extends as far right as it
// can, so it is the loosest of all.
const (
	precQuant = iota
	precImplies
	precOr
	precAnd
	precUntil
	precUnary
	precPrimary
)

func precedence(f Formula) int {
	switch f := f.(type) {
	case *Quantified:
		return precQuant
	case *Binary:
		switch f.Op {
		case OpImplies:
			return precImplies
		case OpOr:
			return precOr
		case OpAnd:
			return precAnd
		default:
			return precUntil
		}
	case *Unary:
		return precUnary
	}
	return precPrimary
}

// openRight reports whether the printed form of f ends in a quantifier body,
// which would swallow anything printed after it.
func openRight(f Formula) bool {
	switch f := f.(type) {
	case *Quantified:
		return true
	case *Unary:
		return f.Op == OpNot && openRight(f.X)
	case *Binary:
		return openRight(f.R)
	}
	return false
}

// Print returns the canonical unicode form of n. Parse(Print(f)) gives a tree
// equal to f.
func Print(n Node) string {
	p := printer{}
	p.node(n)
	return p.b.String()
}

// PrintSpans returns the canonical form of f and the byte range of every
// subformula and term in it, so that any subformula can be located in the
// printed text (seed 001: cause.subformula is a substring of the printed rule).
func PrintSpans(f Formula) (string, map[Node]Range) {
	p := printer{spans: map[Node]Range{}}
	p.node(f)
	return p.b.String(), p.spans
}

type printer struct {
	b     strings.Builder
	spans map[Node]Range
}

func (p *printer) w(s string) { p.b.WriteString(s) }

func (p *printer) node(n Node) {
	start := p.b.Len()
	switch n := n.(type) {
	case Formula:
		p.formula(n)
	case Term:
		p.term(n)
	}
	if p.spans != nil {
		p.spans[n] = Range{start, p.b.Len()}
	}
}

// child prints f, in parentheses when its precedence is below min or when it
// is not the rightmost operand (rightmost false) and ends in a quantifier.
func (p *printer) child(f Formula, min int, rightmost bool) {
	if precedence(f) < min || (!rightmost && openRight(f)) {
		p.w("(")
		p.node(f)
		p.w(")")
		return
	}
	p.node(f)
}

func (p *printer) formula(f Formula) {
	switch f := f.(type) {
	case *Bool:
		if f.Value {
			p.w("⊤")
		} else {
			p.w("⊥")
		}
	case *Atom:
		p.w(f.Name)
	case *TypeCall:
		p.w(f.Type)
		p.w("(")
		p.node(f.Arg)
		p.w(")")
	case *Attribution:
		p.w(f.Func)
		p.w("(")
		p.w(f.Arg)
		p.w(")")
	case *Unary:
		if f.Op == OpNot {
			p.w("¬")
			if _, q := f.X.(*Quantified); q {
				p.node(f.X) // ¬∃ x ∈ S . φ: the quantifier is rightmost
				return
			}
			p.child(f.X, precUnary, true)
			return
		}
		p.w(f.Op.String())
		p.w("(")
		p.node(f.X)
		p.w(")")
	case *Binary:
		prec := precedence(f)
		left, right := prec+1, prec // right-associative: →, U, S, S_last
		if f.Op == OpAnd || f.Op == OpOr {
			left, right = prec, prec+1
		}
		p.child(f.L, left, false)
		p.w(" ")
		p.w(f.Op.String())
		p.w(" ")
		p.child(f.R, right, true)
	case *Quantified:
		p.w(f.Q.String())
		p.w(" ")
		p.w(f.Var)
		if f.Domain != nil {
			p.w(" ∈ ")
			p.node(f.Domain)
		}
		p.w(" . ")
		p.node(f.Body)
	case *Compare:
		p.node(f.L)
		p.w(" ")
		p.w(f.Op.String())
		p.w(" ")
		p.node(f.R)
	case *Member:
		p.node(f.Elem)
		if f.Negated {
			p.w(" ∉ ")
		} else {
			p.w(" ∈ ")
		}
		p.node(f.Set)
	}
}

func (p *printer) term(t Term) {
	switch t := t.(type) {
	case *Ident:
		p.w(t.Name)
	case *Field:
		p.node(t.X)
		p.w(".")
		p.w(t.Name)
	case *Str:
		p.w(`"`)
		p.w(escaper.Replace(t.Value))
		p.w(`"`)
	case *Num:
		if t.Text != "" {
			p.w(t.Text)
		} else {
			p.w(strconv.FormatFloat(t.Value, 'f', -1, 64))
		}
	case *EmptySet:
		p.w("∅")
	case *Call:
		p.w(t.Func)
		p.w("(")
		for i, a := range t.Args {
			if i > 0 {
				p.w(", ")
			}
			p.node(a)
		}
		p.w(")")
	case *Count:
		p.w("count(")
		p.node(t.X)
		p.w(")")
	case *SetLit:
		p.w("{")
		for i, e := range t.Elems {
			if i > 0 {
				p.w(", ")
			}
			p.node(e)
		}
		p.w("}")
	case *Comprehension:
		p.w("{")
		p.node(t.Expr)
		p.w(" | ")
		if t.Domain != nil {
			p.w(t.Var)
			p.w(" ∈ ")
			p.node(t.Domain)
			p.w(", ")
		}
		p.node(t.Guard)
		p.w("}")
	}
}

// escaper writes a string literal so that the scanner reads it back.
var escaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`)

// Sexpr renders n as an S-expression without positions, for comparing trees
// and for tests: (→ (G EditFile) (P_target ReadFile)).
func Sexpr(n Node) string {
	var b strings.Builder
	sexpr(&b, n)
	return b.String()
}

func sexpr(b *strings.Builder, n Node) {
	open := func(head string, kids ...Node) {
		b.WriteString("(")
		b.WriteString(head)
		for _, k := range kids {
			b.WriteString(" ")
			if k == nil {
				b.WriteString("_") // absent (not the identifier nil)
				continue
			}
			sexpr(b, k)
		}
		b.WriteString(")")
	}
	switch n := n.(type) {
	case *Bool:
		b.WriteString(strconv.FormatBool(n.Value))
	case *Atom:
		b.WriteString(n.Name)
	case *TypeCall:
		open("call "+n.Type, n.Arg)
	case *Attribution:
		b.WriteString("(" + n.Func + " " + strconv.Quote(n.Arg) + ")")
	case *Unary:
		open(n.Op.String(), n.X)
	case *Binary:
		open(n.Op.String(), n.L, n.R)
	case *Quantified:
		var d Node
		if n.Domain != nil {
			d = n.Domain
		}
		open(n.Q.String()+" "+n.Var, d, n.Body)
	case *Compare:
		open(n.Op.String(), n.L, n.R)
	case *Member:
		head := "∈"
		if n.Negated {
			head = "∉"
		}
		open(head, n.Elem, n.Set)
	case *Ident:
		b.WriteString(n.Name)
	case *Field:
		open(".", n.X, &Ident{Name: n.Name})
	case *Str:
		b.WriteString(strconv.Quote(n.Value))
	case *Num:
		b.WriteString(strconv.FormatFloat(n.Value, 'g', -1, 64))
	case *EmptySet:
		b.WriteString("∅")
	case *Call:
		kids := make([]Node, len(n.Args))
		for i, a := range n.Args {
			kids[i] = a
		}
		open(n.Func, kids...)
	case *Count:
		open("count", n.X)
	case *SetLit:
		kids := make([]Node, len(n.Elems))
		for i, e := range n.Elems {
			kids[i] = e
		}
		open("set", kids...)
	case *Comprehension:
		var d Node
		if n.Domain != nil {
			d = n.Domain
		}
		open("setof "+n.Var, n.Expr, d, n.Guard)
	}
}
