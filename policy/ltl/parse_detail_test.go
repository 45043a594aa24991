package ltl

import (
	"strings"
	"testing"
)

// TestDetailLongLine: the error of a huge formula shows the characters
// around the column, with the caret under it, not the whole formula.
func TestDetailLongLine(t *testing.T) {
	src := "G(" + strings.Repeat("a ∧ ", 100_000) + "∧ b)"
	_, err := Parse(src)
	pe, ok := err.(*Error)
	if !ok {
		t.Fatalf("Parse: %v", err)
	}
	d := pe.Detail()
	lines := strings.Split(d, "\n")
	if len(d) > 1000 || len(lines) != 3 || !strings.HasPrefix(lines[1], "    …") {
		t.Fatalf("detail of %d bytes:\n%.400s", len(d), d)
	}
	caret := len([]rune(lines[2])) - 1
	if got := []rune(lines[1])[caret]; got != '∧' {
		t.Errorf("caret under %q, want the second ∧\n%s", got, d)
	}
}
