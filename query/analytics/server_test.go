package analytics

import "testing"

// A server's answer is drawn with a column as wide as its widest value or
// name, names in the top edge.
func TestTable(t *testing.T) {
	got := Table("rule_id\tn\nno-push\t12\né\t3\n")
	want := "┌─rule_id─┬─n──┐\n" +
		"│ no-push │ 12 │\n" +
		"│ é       │ 3  │\n" +
		"└─────────┴────┘\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, want := Table("a\n"), "┌─a─┐\n└───┘\n"; got != want {
		t.Errorf("no rows: got\n%s\nwant\n%s", got, want)
	}
}
