package ltl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ponens/ponens/policy/ltl/internal/scan"
)

// MaxDepth caps the nesting of a formula's tree. Deeper formulas are
// rejected with code too-deep. The parser's own recursion is capped at
// maxFrames, which the printed form of any tree within MaxDepth stays under,
// so that Parse(Print(f)) never fails where Parse succeeded.
const MaxDepth = 200

const maxFrames = 10 * MaxDepth

// Sentinel errors. A *Error from Parse or Check wraps exactly one of them, so
// callers can tell the kinds apart with errors.Is.
var (
	// ErrSyntax: the text is not a formula.
	ErrSyntax = errors.New("syntax error")
	// ErrTooDeep: the formula nests deeper than MaxDepth.
	ErrTooDeep = errors.New("formula too deep")
	// ErrUnsupported: the formula parses but uses a construct the evaluator
	// cannot evaluate; nothing unsupported ever evaluates silently.
	ErrUnsupported = errors.New("unsupported construct")
	// ErrInternal: the parser failed on its own; a bug, which fuzzing hunts.
	ErrInternal = errors.New("internal parser error")
)

// Error is a problem at a place in a formula's text.
type Error struct {
	Offset int    // byte offset in the formula text
	Line   int    // 1-based line in the formula text
	Col    int    // 1-based column (in characters) in the formula text
	Code   string // stable code: syntax, unterminated-string, illegal-char, too-deep, unknown-function, unsupported, internal
	Msg    string
	Source string // the formula text
	kind   error
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Col, e.Code, e.Msg) }

// Unwrap returns the sentinel that classifies e.
func (e *Error) Unwrap() error { return e.kind }

// detailRunes is how much of a long source line Detail shows on each side
// of the column.
const detailRunes = 60

// Detail renders e with the source line and a caret under the column. A
// line longer than 2×detailRunes characters is cut to the ones around the
// column, "…" marking what was left out, so that a huge formula is not
// echoed whole.
func (e *Error) Detail() string {
	lines := strings.Split(e.Source, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return e.Error()
	}
	line := []rune(lines[e.Line-1])
	col := max(e.Col-1, 0)
	prefix, suffix := "", ""
	if len(line) > 2*detailRunes {
		start := max(min(col-detailRunes, len(line)-2*detailRunes), 0)
		end := min(start+2*detailRunes, len(line))
		if start > 0 {
			prefix = "…"
		}
		if end < len(line) {
			suffix = "…"
		}
		line, col = line[start:end], col-start+len([]rune(prefix))
	}
	return fmt.Sprintf("%s\n    %s%s%s\n    %s^", e.Error(), prefix, string(line), suffix, strings.Repeat(" ", col))
}

func newError(src string, off int, code string, kind error, format string, args ...any) *Error {
	line, col := LineCol(src, off)
	return &Error{Offset: off, Line: line, Col: col, Code: code, Msg: fmt.Sprintf(format, args...), Source: src, kind: kind}
}

// LineCol converts a byte offset in src to a 1-based line and column, the
// column counted in characters.
func LineCol(src string, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	line, col = 1, 1
	for _, r := range src[:off] {
		if r == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// Keywords of the language that are spelled as identifiers.
var (
	unaryKeywords = map[string]UnaryOp{
		"G": OpG, "F": OpF, "X": OpX, "P": OpP, "H": OpH,
		"P_target": OpPTarget, "P_chain": OpPChain, "H_target": OpHTarget, "H_chain": OpHChain,
	}
	binaryKeywords = map[string]BinaryOp{"U": OpU, "S": OpS, "S_last": OpSLast}
	// setFuncs are the term functions of seed 000 §2.6.
	setFuncs = map[string]int{"inputs": 1, "outputs": 1, "target": 1, "ancestors": 1}
	// attributionFuncs take their argument verbatim (seed 000 §2.6).
	attributionFuncs = map[string]bool{"strength_at_least": true, "oracle_type": true, "produced_by": true, "conforms_to": true, "ref_model": true}
)

// IsKeyword reports whether name is reserved by the language and so cannot
// name an atom or a variable.
func IsKeyword(name string) bool {
	_, u := unaryKeywords[name]
	_, b := binaryKeywords[name]
	return u || b || name == "count"
}

// Parse parses a formula in either surface (unicode or ASCII). It never
// panics; a failure is an *Error.
func Parse(src string) (f Formula, err error) {
	p := &parser{src: src, sc: scan.New(src)}
	defer func() {
		if r := recover(); r != nil {
			if pe, ok := r.(*Error); ok {
				f, err = nil, pe
				return
			}
			f, err = nil, newError(src, p.tok.Start, "internal", ErrInternal, "parser failed: %v", r)
		}
	}()
	p.advance()
	f = p.formula()
	if p.tok.Kind != scan.EOF {
		p.failf("syntax", "unexpected %s after the formula", p.describe())
	}
	if n := deepest(f, 1); n != nil {
		return nil, newError(src, n.Pos().Start, "too-deep", ErrTooDeep, "formula nests deeper than %d levels", MaxDepth)
	}
	return f, nil
}

// deepest returns a node deeper than MaxDepth in n's tree, or nil.
func deepest(n Node, depth int) Node {
	if depth > MaxDepth {
		return n
	}
	for _, c := range Children(n) {
		if d := deepest(c, depth+1); d != nil {
			return d
		}
	}
	return nil
}

// MustParse is Parse for formulas known to be valid; it panics otherwise.
func MustParse(src string) Formula {
	f, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return f
}

type parser struct {
	src     string
	sc      *scan.Scanner
	tok     scan.Token
	prevEnd int // end of the last token consumed
	depth   int
}

func (p *parser) advance() {
	p.prevEnd = p.tok.End
	p.tok = p.sc.Next()
	if p.tok.Kind == scan.Illegal {
		code := "illegal-char"
		if strings.HasPrefix(p.sc.Err(), "unterminated") {
			code = "unterminated-string"
		}
		panic(newError(p.src, p.tok.Start, code, ErrSyntax, "%s", p.sc.Err()))
	}
}

func (p *parser) failf(code, format string, args ...any) {
	panic(newError(p.src, p.tok.Start, code, ErrSyntax, format, args...))
}

func (p *parser) describe() string {
	switch p.tok.Kind {
	case scan.EOF:
		return "end of formula"
	case scan.Ident, scan.Number:
		return fmt.Sprintf("%q", p.tok.Text)
	case scan.String:
		return fmt.Sprintf("string %q", p.tok.Text)
	}
	return p.tok.Kind.String()
}

func (p *parser) expect(k scan.Kind, what string) scan.Token {
	if p.tok.Kind != k {
		p.failf("syntax", "expected %s, found %s", what, p.describe())
	}
	t := p.tok
	p.advance()
	return t
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxFrames {
		panic(newError(p.src, p.tok.Start, "too-deep", ErrTooDeep, "formula nests deeper than %d levels", MaxDepth))
	}
}

func (p *parser) leave() { p.depth-- }

// formula := disj [→ formula]   (implication is right-associative)
func (p *parser) formula() Formula {
	p.enter()
	defer p.leave()
	l := p.disjunction()
	if p.tok.Kind == scan.Implies {
		p.advance()
		r := p.formula()
		return &Binary{Op: OpImplies, L: l, R: r, Range: Range{l.Pos().Start, p.prevEnd}}
	}
	return l
}

func (p *parser) disjunction() Formula {
	l := p.conjunction()
	for p.tok.Kind == scan.Or {
		p.advance()
		r := p.conjunction()
		l = &Binary{Op: OpOr, L: l, R: r, Range: Range{l.Pos().Start, p.prevEnd}}
	}
	return l
}

func (p *parser) conjunction() Formula {
	l := p.until()
	for p.tok.Kind == scan.And {
		p.advance()
		r := p.until()
		l = &Binary{Op: OpAnd, L: l, R: r, Range: Range{l.Pos().Start, p.prevEnd}}
	}
	return l
}

// until := unary [(U | S | S_last) until]   (right-associative)
func (p *parser) until() Formula {
	p.enter()
	defer p.leave()
	l := p.unary()
	if p.tok.Kind == scan.Ident {
		if op, ok := binaryKeywords[p.tok.Text]; ok {
			p.advance()
			r := p.until()
			return &Binary{Op: op, L: l, R: r, Range: Range{l.Pos().Start, p.prevEnd}}
		}
	}
	return l
}

func (p *parser) unary() Formula {
	p.enter()
	defer p.leave()
	start := p.tok.Start
	switch p.tok.Kind {
	case scan.Not:
		p.advance()
		x := p.unary()
		return &Unary{Op: OpNot, X: x, Range: Range{start, p.prevEnd}}
	case scan.Forall, scan.Exists, scan.Unique:
		return p.quantified()
	case scan.Ident:
		if op, ok := unaryKeywords[p.tok.Text]; ok {
			p.advance()
			x := p.unary()
			return &Unary{Op: op, X: x, Range: Range{start, p.prevEnd}}
		}
	}
	return p.primary()
}

// quantified := Q var [∈ term] (. | : | →) formula
func (p *parser) quantified() Formula {
	start := p.tok.Start
	q := map[scan.Kind]Quant{scan.Forall: Forall, scan.Exists: Exists, scan.Unique: Unique}[p.tok.Kind]
	p.advance()
	v := p.expect(scan.Ident, "a variable name after the quantifier")
	if IsKeyword(v.Text) {
		p.sc.Reset(v.Start)
		p.advance()
		p.failf("syntax", "%q is a keyword and cannot name a variable", v.Text)
	}
	var domain Term
	if p.tok.Kind == scan.In {
		p.advance()
		domain = p.term()
	}
	switch p.tok.Kind {
	case scan.Dot, scan.Colon, scan.Implies:
		p.advance()
	default:
		p.failf("syntax", "expected '.' before the body of the quantifier, found %s", p.describe())
	}
	body := p.formula()
	return &Quantified{Q: q, Var: v.Text, Domain: domain, Body: body, Range: Range{start, p.prevEnd}}
}

func (p *parser) primary() Formula {
	start := p.tok.Start
	switch p.tok.Kind {
	case scan.True, scan.False:
		v := p.tok.Kind == scan.True
		end := p.tok.End
		p.advance()
		return &Bool{Value: v, Range: Range{start, end}}
	case scan.LParen:
		p.advance()
		f := p.formula()
		p.expect(scan.RParen, "')'")
		return f
	case scan.Ident:
		name := p.tok.Text
		if _, ok := binaryKeywords[name]; ok {
			p.failf("syntax", "%q needs a formula on its left", name)
		}
		if attributionFuncs[name] {
			return p.attribution()
		}
		if isTypeName(name) && !p.peekFieldDot() {
			end := p.tok.End
			p.advance()
			if p.tok.Kind == scan.LParen && p.tok.Attached {
				p.advance()
				arg := p.formula()
				rp := p.expect(scan.RParen, "')' closing the call form")
				return &TypeCall{Type: name, Arg: arg, Range: Range{start, rp.End}}
			}
			if !p.startsComparison() {
				return &Atom{Name: name, Range: Range{start, end}}
			}
			// A CamelCase constant on the left of a comparison.
			p.sc.Reset(start)
			p.advance()
		} else if _, isFunc := setFuncs[name]; !isFunc && name != "count" && !p.peekFieldDot() {
			end := p.tok.End
			p.advance()
			if p.tok.Kind == scan.LParen && p.tok.Attached {
				p.sc.Reset(start)
				p.advance()
				p.failf("unknown-function", "unknown function %q (known: inputs, outputs, target, ancestors, count, strength_at_least, oracle_type, produced_by, conforms_to, ref_model, and Type(φ) for a CamelCase type)", name)
			}
			if !p.startsComparison() {
				return &Atom{Name: name, Range: Range{start, end}}
			}
			p.sc.Reset(start)
			p.advance()
		}
	case scan.Number, scan.String, scan.Empty, scan.LBrace:
	default:
		p.failf("syntax", "expected a formula, found %s", p.describe())
	}
	return p.comparison()
}

// peekFieldDot reports whether the current identifier is followed by an
// attached '.' and another identifier (a field access such as r.severity).
func (p *parser) peekFieldDot() bool {
	save := p.tok
	p.advance()
	dot := p.tok
	ok := dot.Kind == scan.Dot && dot.Attached
	if ok {
		p.advance()
		ok = p.tok.Kind == scan.Ident && p.tok.Attached
	}
	p.sc.Reset(save.Start)
	p.advance()
	return ok
}

func (p *parser) startsComparison() bool {
	switch p.tok.Kind {
	case scan.Eq, scan.Neq, scan.Lt, scan.Le, scan.Gt, scan.Ge, scan.In, scan.NotIn:
		return true
	}
	return false
}

func (p *parser) comparison() Formula {
	l := p.term()
	op := p.tok.Kind
	if !p.startsComparison() {
		p.failf("syntax", "expected a comparison (=, ≠, <, ≤, >, ≥, ∈, ∉) after the term, found %s", p.describe())
	}
	p.advance()
	r := p.term()
	rng := Range{l.Pos().Start, r.Pos().End}
	switch op {
	case scan.In, scan.NotIn:
		return &Member{Elem: l, Set: r, Negated: op == scan.NotIn, Range: rng}
	}
	cmp := map[scan.Kind]CompareOp{scan.Eq: CmpEq, scan.Neq: CmpNeq, scan.Lt: CmpLt, scan.Le: CmpLe, scan.Gt: CmpGt, scan.Ge: CmpGe}[op]
	return &Compare{Op: cmp, L: l, R: r, Range: rng}
}

func (p *parser) attribution() Formula {
	start, name := p.tok.Start, p.tok.Text
	p.advance()
	if p.tok.Kind != scan.LParen {
		p.failf("syntax", "%s takes an argument in parentheses", name)
	}
	raw, rawStart, ok := p.sc.RawUntilParen()
	if !ok {
		panic(newError(p.src, rawStart, "syntax", ErrSyntax, "missing ')' closing %s(", name))
	}
	arg := strings.TrimSpace(raw)
	if arg == "" {
		panic(newError(p.src, rawStart, "syntax", ErrSyntax, "%s needs an argument", name))
	}
	p.advance()
	rp := p.expect(scan.RParen, "')'")
	return &Attribution{Func: name, Arg: arg, Range: Range{start, rp.End}}
}

// term := primaryTerm ('.' ident)*
func (p *parser) term() Term {
	p.enter()
	defer p.leave()
	t := p.primaryTerm()
	for p.tok.Kind == scan.Dot && p.tok.Attached {
		p.advance()
		if p.tok.Kind != scan.Ident || !p.tok.Attached {
			p.failf("syntax", "expected a field name after '.', found %s", p.describe())
		}
		t = &Field{X: t, Name: p.tok.Text, Range: Range{t.Pos().Start, p.tok.End}}
		p.advance()
	}
	return t
}

func (p *parser) primaryTerm() Term {
	start, end := p.tok.Start, p.tok.End
	switch p.tok.Kind {
	case scan.Number:
		text := p.tok.Text
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			p.failf("syntax", "bad number %q", text)
		}
		p.advance()
		return &Num{Value: v, Text: text, Range: Range{start, end}}
	case scan.String:
		v := p.tok.Text
		p.advance()
		return &Str{Value: v, Range: Range{start, end}}
	case scan.Empty:
		p.advance()
		return &EmptySet{Range: Range{start, end}}
	case scan.LBrace:
		return p.set()
	case scan.Ident:
		name := p.tok.Text
		if name == "count" {
			p.advance()
			p.expect(scan.LParen, "'(' after count")
			x := p.formula()
			rp := p.expect(scan.RParen, "')' closing count(")
			return &Count{X: x, Range: Range{start, rp.End}}
		}
		if IsKeyword(name) {
			p.failf("syntax", "%q is a keyword and cannot be used as a value", name)
		}
		p.advance()
		if arity, ok := setFuncs[name]; ok && p.tok.Kind == scan.LParen {
			p.advance()
			var args []Term
			for p.tok.Kind != scan.RParen {
				if len(args) > 0 {
					p.expect(scan.Comma, "',' between arguments")
				}
				args = append(args, p.term())
			}
			rp := p.expect(scan.RParen, "')'")
			if len(args) != arity {
				panic(newError(p.src, start, "syntax", ErrSyntax, "%s takes %d argument, got %d", name, arity, len(args)))
			}
			return &Call{Func: name, Args: args, Range: Range{start, rp.End}}
		}
		if p.tok.Kind == scan.LParen && p.tok.Attached {
			p.sc.Reset(start)
			p.advance()
			p.failf("unknown-function", "unknown function %q in a term (known: inputs, outputs, target, ancestors, count)", name)
		}
		return &Ident{Name: name, Range: Range{start, end}}
	}
	p.failf("syntax", "expected a value, found %s", p.describe())
	return nil
}

// set := '{' '}' | '{' term (',' term)* '}' | '{' term '|' [var ∈ term (.|,|:)] formula '}'
func (p *parser) set() Term {
	start := p.tok.Start
	p.advance()
	if p.tok.Kind == scan.RBrace {
		end := p.tok.End
		p.advance()
		return &SetLit{Range: Range{start, end}}
	}
	first := p.term()
	if p.tok.Kind == scan.Bar {
		p.advance()
		v := rootVar(first)
		if v == "" {
			p.failf("syntax", "the expression before '|' must start with a variable")
		}
		c := &Comprehension{Expr: first, Var: v}
		// Optional explicit domain: x ∈ D followed by ',' '.' or ':'.
		if p.tok.Kind == scan.Ident && p.tok.Text == v {
			save := p.tok.Start
			p.advance()
			if p.tok.Kind == scan.In {
				p.advance()
				d := p.term()
				if p.tok.Kind == scan.Comma || p.tok.Kind == scan.Dot || p.tok.Kind == scan.Colon {
					p.advance()
					c.Domain = d
				} else {
					p.sc.Reset(save)
					p.advance()
				}
			} else {
				p.sc.Reset(save)
				p.advance()
			}
		}
		c.Guard = p.formula()
		rb := p.expect(scan.RBrace, "'}' closing the set comprehension")
		c.Range = Range{start, rb.End}
		return c
	}
	elems := []Term{first}
	for p.tok.Kind == scan.Comma {
		p.advance()
		elems = append(elems, p.term())
	}
	rb := p.expect(scan.RBrace, "'}' closing the set")
	return &SetLit{Elems: elems, Range: Range{start, rb.End}}
}

// rootVar returns the variable at the root of a field chain (x in x.a.b).
func rootVar(t Term) string {
	for {
		switch n := t.(type) {
		case *Field:
			t = n.X
		case *Ident:
			return n.Name
		default:
			return ""
		}
	}
}

// isTypeName reports whether name is CamelCase: an action or artifact type.
func isTypeName(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r) && !IsKeyword(name)
}
