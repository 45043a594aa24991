package ltl

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseTrees(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a", "a"},
		{"⊤ ∧ false", "(∧ true false)"},
		{"¬a ∧ b", "(∧ (¬ a) b)"},
		{"!a && b || c", "(∨ (∧ (¬ a) b) c)"},
		{"not a /\\ b \\/ c", "(∨ (∧ (¬ a) b) c)"},
		{"a → b → c", "(→ a (→ b c))"},
		{"a -> b => c", "(→ a (→ b c))"},
		{"a ∨ b → c ∧ d", "(→ (∨ a b) (∧ c d))"},
		{"G a ∧ b", "(∧ (G a) b)"},
		{"G(a ∧ b)", "(G (∧ a b))"},
		{"a U b U c", "(U a (U b c))"},
		{"a ∧ b U c", "(∧ a (U b c))"},
		{"a S b", "(S a b)"},
		{"a S_last b", "(S_last a b)"},
		{"F X P H a", "(F (X (P (H a))))"},
		{"P_target a ∨ P_chain b ∨ H_target c ∨ H_chain d", "(∨ (∨ (∨ (P_target a) (P_chain b)) (H_target c)) (H_chain d))"},
		{"VerificationResult(proved ∨ sat)", "(call VerificationResult (∨ proved sat))"},
		{"rationale ≠ ∅", "(≠ rationale ∅)"},
		{"rationale != ∅", "(≠ rationale ∅)"},
		{"count(EditFile) <= 3", "(≤ (count EditFile) 3)"},
		{"count(EditFile) ≥ 1.5", "(≥ (count EditFile) 1.5)"},
		{"r.severity >= High", "(≥ (. r severity) High)"},
		{"Critical = r.severity", "(= Critical (. r severity))"},
		{"x ∈ {a, b}", "(∈ x (set a b))"},
		{"x in {}", "(∈ x (set))"},
		{"x ∉ outputs(b)", "(∉ x (outputs b))"},
		{`label = "a \"b\""`, `(= label "a \"b\"")`},
		{"label = 'x'", `(= label "x")`},
		{"target_artifact_id ∈ {a.id | a.type = IMLModel}", "(∈ target_artifact_id (setof a (. a id) _ (= (. a type) IMLModel)))"},
		{"x ∈ {a.id | a ∈ residuals, a.status = Open}", "(∈ x (setof a (. a id) residuals (= (. a status) Open)))"},
		{"∀ x ∈ T . a", "(∀ x T a)"},
		{"forall x in T : a", "(∀ x T a)"},
		{"exists x in T . a", "(∃ x T a)"},
		{"exists! b . b < a", "(∃! b _ (< b a))"},
		{"∃! b . b < a ∧ c", "(∃! b _ (∧ (< b a) c))"},
		{"∀ input ∈ inputs(a) → ∃! b . b < a ∧ input ∈ outputs(b)", "(∀ input (inputs a) (∃! b _ (∧ (< b a) (∈ input (outputs b)))))"},
		{"¬∃ r ∈ residuals . r.severity = Critical ∧ r.status = Open", "(¬ (∃ r residuals (∧ (= (. r severity) Critical) (= (. r status) Open))))"},
		{"a ∧ ∀ x ∈ T . b ∨ c", "(∧ a (∀ x T (∨ b c)))"},
		{"conforms_to(ref:atlas:mifir-rts22-art4)", `(conforms_to "ref:atlas:mifir-rts22-art4")`},
		{"strength_at_least( tests )", `(strength_at_least "tests")`},
		{"produced_by(a, imandrax)", `(produced_by "a, imandrax")`},
		{"ancestors(derived_from) = ∅", "(= (ancestors derived_from) ∅)"},
		{"G(EditFile ∧ high_stakes_path → P_chain(VerificationResult(proved ∨ sat) ∨ Decomposition))",
			"(G (→ (∧ EditFile high_stakes_path) (P_chain (∨ (call VerificationResult (∨ proved sat)) Decomposition))))"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			f, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := Sexpr(f); got != tt.want {
				t.Errorf("tree\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	src := "G(a → P_target(b))"
	f := MustParse(src)
	g := f.(*Unary)
	imp := g.X.(*Binary)
	if got := src[g.Range.Start:g.Range.End]; got != "G(a → P_target(b))" {
		t.Errorf("G range covers %q", got)
	}
	if got := src[imp.Range.Start:imp.Range.End]; got != "a → P_target(b)" {
		t.Errorf("→ range covers %q", got)
	}
	b := imp.R.(*Unary).X.(*Atom)
	if got := src[b.Range.Start:b.Range.End]; got != "b" {
		t.Errorf("atom range covers %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src, want string
		kind      error
	}{
		{"", "1:1: syntax: expected a formula, found end of formula", ErrSyntax},
		{"G(a", "1:4: syntax: expected ')', found end of formula", ErrSyntax},
		{"a ∧ ∧ b", "1:5: syntax: expected a formula, found '∧'", ErrSyntax},
		{"a b", `1:3: syntax: unexpected "b" after the formula`, ErrSyntax},
		{"a\n∧ # b", "2:3: illegal-char: unexpected character '#'", ErrSyntax},
		{`x = "abc`, "1:5: unterminated-string: unterminated string", ErrSyntax},
		{"foo(x)", `1:1: unknown-function: unknown function "foo" (known: inputs, outputs, target, ancestors, count, strength_at_least, oracle_type, produced_by, conforms_to, ref_model, and Type(φ) for a CamelCase type)`, ErrSyntax},
		{"x.y", "1:4: syntax: expected a comparison (=, ≠, <, ≤, >, ≥, ∈, ∉) after the term, found end of formula", ErrSyntax},
		{"U a", `1:1: syntax: "U" needs a formula on its left`, ErrSyntax},
		{"∀ G ∈ T . a", `1:3: syntax: "G" is a keyword and cannot name a variable`, ErrSyntax},
		{"∀ x ∈ T a", "1:9: syntax: expected '.' before the body of the quantifier, found \"a\"", ErrSyntax},
		{"conforms_to(x", "1:13: syntax: missing ')' closing conforms_to(", ErrSyntax},
		{"inputs(a, b) = ∅", "1:1: syntax: inputs takes 1 argument, got 2", ErrSyntax},
		{strings.Repeat("¬", MaxDepth+5) + "a", "1:201: too-deep: formula nests deeper than 200 levels", ErrTooDeep},
		{strings.Repeat("(", 3000) + "a" + strings.Repeat(")", 3000), "1:667: too-deep: formula nests deeper than 200 levels", ErrTooDeep},
		{"\xff", "1:1: illegal-char: invalid UTF-8", ErrSyntax},
	}
	for _, tt := range tests {
		name := tt.src
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tt.src)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) = %v, want *Error", tt.src, err)
			}
			if pe.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", pe.Error(), tt.want)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(%v) false", tt.kind)
			}
		})
	}
}

func TestErrorDetail(t *testing.T) {
	_, err := Parse("G(a ∧ ∧ b)")
	want := "1:7: syntax: expected a formula, found '∧'\n    G(a ∧ ∧ b)\n          ^"
	if got := err.(*Error).Detail(); got != want {
		t.Errorf("Detail\n got %q\nwant %q", got, want)
	}
}

// TestPrintRoundTrip is a property over generated formulas: printing and
// parsing again gives the same tree, and printing that gives the same text.
func TestPrintRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		f := randomTree(r, 6)
		text := Print(f)
		g, err := Parse(text)
		if err != nil {
			t.Fatalf("case %d: Parse(Print) failed: %v\n%s\n%s", i, err, text, Sexpr(f))
		}
		if Sexpr(g) != Sexpr(f) {
			t.Fatalf("case %d: round trip changed the tree\nprinted %s\n got %s\nwant %s", i, text, Sexpr(g), Sexpr(f))
		}
		if Print(g) != text {
			t.Fatalf("case %d: printing is not canonical: %q vs %q", i, Print(g), text)
		}
	}
}

// TestPrintSpans checks that every subformula's span is where its own
// printed form stands in the rule's printed form.
func TestPrintSpans(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		f := randomTree(r, 5)
		text, spans := PrintSpans(f)
		Walk(f, func(n Node) bool {
			sp, ok := spans[n]
			if !ok {
				t.Fatalf("no span for %s in %s", Sexpr(n), text)
			}
			if got, want := text[sp.Start:sp.End], Print(n); got != want {
				t.Fatalf("span of %s is %q, its own print is %q (in %s)", Sexpr(n), got, want, text)
			}
			return true
		})
	}
}

// randomTree builds any tree the grammar allows, terms included.
func randomTree(r *rand.Rand, depth int) Formula {
	if depth == 0 || r.IntN(5) == 0 {
		switch r.IntN(9) {
		case 0:
			return &Bool{Value: r.IntN(2) == 0}
		case 1:
			return &Compare{Op: CompareOp(r.IntN(6)), L: randomTerm(r, 2), R: randomTerm(r, 2)}
		case 2:
			return &Member{Elem: randomTerm(r, 1), Set: randomTerm(r, 2), Negated: r.IntN(2) == 0}
		case 3:
			return &TypeCall{Type: "VerificationResult", Arg: randomTree(r, depth/2)}
		case 4:
			return &Attribution{Func: "conforms_to", Arg: "ref:atlas:x@2"}
		}
		return &Atom{Name: []string{"a", "b", "EditFile", "high_stakes_path", "start_event"}[r.IntN(5)]}
	}
	switch r.IntN(6) {
	case 0, 1:
		return &Unary{Op: UnaryOp(r.IntN(10)), X: randomTree(r, depth-1)}
	case 2, 3, 4:
		return &Binary{Op: BinaryOp(r.IntN(6)), L: randomTree(r, depth-1), R: randomTree(r, depth-1)}
	}
	q := &Quantified{Q: Quant(r.IntN(3)), Var: "x", Body: randomTree(r, depth-1)}
	if r.IntN(3) > 0 {
		q.Domain = randomTerm(r, 2)
	}
	return q
}

func randomTerm(r *rand.Rand, depth int) Term {
	if depth == 0 || r.IntN(3) == 0 {
		switch r.IntN(5) {
		case 0:
			return &Num{Value: float64(r.IntN(100)) / 4}
		case 1:
			return &Str{Value: []string{"a", `q"uote`, `back\slash`, ""}[r.IntN(4)]}
		case 2:
			return &EmptySet{}
		}
		return &Ident{Name: []string{"x", "artifacts", "High", "rationale"}[r.IntN(4)]}
	}
	switch r.IntN(6) {
	case 0:
		return &Field{X: randomTerm(r, depth-1), Name: "severity"}
	case 1:
		return &Call{Func: "inputs", Args: []Term{randomTerm(r, depth-1)}}
	case 2:
		return &Count{X: randomTree(r, 1)}
	case 3:
		return &SetLit{Elems: []Term{randomTerm(r, depth-1), randomTerm(r, depth-1)}}
	case 4:
		c := &Comprehension{Expr: &Field{X: &Ident{Name: "y"}, Name: "id"}, Var: "y", Guard: randomTree(r, 1)}
		if r.IntN(2) == 0 {
			c.Domain = &Ident{Name: "residuals"}
		}
		return c
	}
	return &Ident{Name: "y"}
}
