package ltl

import (
	"errors"
	"testing"
)

// FuzzParse: no input crashes the parser or the checker, an internal error
// is a bug, and whatever parses prints to text that parses to the same tree.
func FuzzParse(f *testing.F) {
	for _, s := range seedFormulas {
		f.Add(s.src)
	}
	for _, s := range []string{"a U b S c", "x ∈ {a.id | a ∈ residuals, a.status = Open}", "count(a) ≥ 1.5", `label = "q\"x"`,
		"exists! b . b < a", "conforms_to(ref:x@1)", "¬∀ x ∈ T . ¬a", "((((a))))", "G(", "∃", "x.", "{", "1 = ∅"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			if errors.Is(err, ErrInternal) {
				t.Fatalf("internal parser error on %q: %v", src, err)
			}
			return
		}
		_ = Check(src, g)
		_ = Classify(g)
		text := Print(g)
		h, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(Print(%q)) = %q fails: %v", src, text, err)
		}
		if Sexpr(h) != Sexpr(g) {
			t.Fatalf("round trip of %q changed the tree:\n%s\n%s", src, Sexpr(g), Sexpr(h))
		}
	})
}
