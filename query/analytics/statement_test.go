package analytics

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// printer stands in for the store's formatQuerySingleLine: it returns what
// it was told the parser printed, and records the text it was given.
type printer struct {
	printed string
	got     string
}

func (p *printer) Query(_ context.Context, _ string, params map[string]string, _ string) ([]byte, error) {
	p.got = params["q"]
	return []byte(p.printed + "\n"), nil
}

func TestStatementRefusesClauses(t *testing.T) {
	for _, tc := range []struct{ printed, want string }{
		{"SELECT * FROM (SELECT 1) SETTINGS readonly = 0", "SETTINGS"},
		{"SELECT * FROM (SELECT 1 SETTINGS max_threads = 1)", "SETTINGS"},
		{"SELECT * FROM (SELECT 1 INTO OUTFILE 'x')", "INTO OUTFILE"},
		{"SELECT * FROM (SELECT 1 into   Outfile 'x')", "INTO OUTFILE"},
		{"SELECT * FROM (SELECT 'SETTINGS' AS a, `INTO OUTFILE` AS b, 'it\\'s SETTINGS' AS c)", ""},
		{"SELECT * FROM (SELECT 1 AS settings FROM system.settings)", ""},
		{"SELECT * FROM (SELECT 1 AS SETTINGS)", ""},
		{"SELECT * FROM (SELECT 1 AS SETTINGS, 2 AS b)", ""},
		{"SELECT * FROM (SELECT 1) SETTINGS a = 1, readonly = 0", "SETTINGS"},
		{"SELECT * FROM (SELECT 1) SETTINGS max_threads=1", "SETTINGS"},
		{"SELECT * FROM (SELECT 1) SETTINGS `readonly` = 0", "SETTINGS"},
		{"SELECT * FROM (SELECT 'INTO' AS OUTFILE)", ""},
		{"SELECT * FROM (SELECT File('/etc/passwd'))", "file()"},
		{"SELECT * FROM (SELECT file FROM record_entries)", ""},
		{"SELECT * FROM (SELECT * APPLY file FROM (SELECT '/etc/hostname' AS p))", "file()"},
		{"SELECT * FROM (SELECT 'file(' AS file)", ""},
	} {
		p := &printer{printed: tc.printed}
		stmt, err := Statement(context.Background(), p, "SELECT 1")
		var nq *NotQueryError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.printed, err)
		case tc.want == "" && stmt != tc.printed:
			t.Errorf("%s: ran %q", tc.printed, stmt)
		case tc.want != "" && (!errors.As(err, &nq) || nq.Word != tc.want):
			t.Errorf("%s: got %q, %v; want %s refused", tc.printed, stmt, err, tc.want)
		}
	}
}

func TestStatementReadsQueryAsSubquery(t *testing.T) {
	p := &printer{printed: "SELECT * FROM (SELECT 1)"}
	if _, err := Statement(context.Background(), p, "SELECT 1;"); err != nil || p.got != Wrap("SELECT 1") {
		t.Errorf("parser given %q (%v), want %q", p.got, err, Wrap("SELECT 1"))
	}
	// What the parser printed must be the SELECT of Wrap.
	for _, printed := range []string{"INSERT INTO t SELECT 1", "SELECT 1\nSELECT 2", "EXPLAIN SELECT 1"} {
		p := &printer{printed: printed}
		if _, err := Statement(context.Background(), p, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "not one SELECT") {
			t.Errorf("printed %q: got %v, want refused", printed, err)
		}
	}
	// An EXPLAIN is read as it stands and must print as one.
	p = &printer{printed: "EXPLAIN SELECT 1"}
	if _, err := Statement(context.Background(), p, " /* c */ explain SELECT 1;"); err != nil || p.got != "/* c */ explain SELECT 1" {
		t.Errorf("parser given %q (%v)", p.got, err)
	}
	p = &printer{printed: "SELECT * FROM (EXPLAIN SELECT 1)"}
	if _, err := Statement(context.Background(), p, "EXPLAIN SELECT 1"); err == nil {
		t.Error("an EXPLAIN printed as a SELECT ran")
	}
}

// The small lexers never panic; dropFinalSemicolon takes away one
// semicolon or nothing; a SETTINGS clause appended after a statement
// without quotes is always found.
func FuzzStatementLexers(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT 1; -- done", "SELECT ';' AS a", "SELECT `x", "SELECT 'a\\'b' SETTINGS x = 1", "SELECT file('/etc/passwd')", "/* ; */", ";"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = forbiddenClause(s)
		got := dropFinalSemicolon(s)
		if got != s && (len(got) != len(s)-1 || strings.Count(got, ";") != strings.Count(s, ";")-1) {
			t.Fatalf("dropFinalSemicolon(%q) = %q", s, got)
		}
		if !strings.ContainsAny(s, "'`\"\\") && forbiddenClause(s+" SETTINGS readonly = 0") == "" {
			t.Fatalf("SETTINGS after %q not found", s)
		}
	})
}
