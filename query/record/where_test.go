package record

import (
	"errors"
	"strings"
	"testing"
)

func TestParseWhere(t *testing.T) {
	for _, c := range []struct {
		expr string
		want Where
		err  bool
	}{
		{"diverged", Where{Form: WhereDiverged}, false},
		{"  raised ", Where{Form: WhereRaised}, false},
		{"outcome:Executed", Where{Form: WhereOutcome, Text: "Executed"}, false},
		{"outcome: Rejected ", Where{Form: WhereOutcome, Text: "Rejected"}, false},
		{"a.c = Capture", Where{Form: WhereSubstring, Text: "a.c = Capture"}, false},
		{"Diverged", Where{Form: WhereSubstring, Text: "Diverged"}, false}, // the keywords are lowercase
		{"", Where{}, true},
		{"   ", Where{}, true},
		{"outcome:", Where{}, true},
		{"outcome:  ", Where{}, true},
	} {
		got, err := ParseWhere(c.expr)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseWhere(%q) = %+v, %v; want %+v, error %v", c.expr, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, ErrWhere) {
			t.Errorf("ParseWhere(%q): %v is not ErrWhere", c.expr, err)
		}
	}
}

func TestWhereMatches(t *testing.T) {
	r := Region{Constraints: []string{"a.c = Capture", "s.stored"}, Invariant: "{s with last = Replayed}"}
	for _, c := range []struct {
		expr string
		want bool
	}{
		{"a.c = Capture", true}, {"stored", true}, {"last = Replayed", true}, {"Refund", false},
	} {
		w, err := ParseWhere(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.matches(r); got != c.want {
			t.Errorf("%q matches %+v: %v, want %v", c.expr, r, got, c.want)
		}
	}
}

// FuzzParseWhere: every expression either parses to a Where that reads
// back (String) as an expression parsing to the same Where, or is refused
// with ErrWhere; nothing panics.
func FuzzParseWhere(f *testing.F) {
	for _, s := range []string{"diverged", "raised", "outcome:Executed", "a.c = Capture", "", " outcome: x ", "outcome:outcome:", "\x00", "raised\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		w, err := ParseWhere(expr)
		if err != nil {
			if !errors.Is(err, ErrWhere) {
				t.Fatalf("ParseWhere(%q): %v is not ErrWhere", expr, err)
			}
			if strings.TrimSpace(expr) != "" && !strings.HasPrefix(strings.TrimSpace(expr), "outcome:") {
				t.Fatalf("ParseWhere(%q) refused a non-empty substring: %v", expr, err)
			}
			return
		}
		again, err := ParseWhere(w.String())
		if err != nil || again != w {
			t.Fatalf("ParseWhere(%q) = %+v reads back as %q = %+v, %v", expr, w, w.String(), again, err)
		}
	})
}
