package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ponens/ponens/sink/chdb"
)

// makeStore makes an empty store at dir, as the engine writes one.
func makeStore(t *testing.T, dir string) {
	t.Helper()
	e, err := chdb.Open(chdb.Options{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := chdb.Migrate(e); err != nil {
		t.Fatal(err)
	}
}

// Only a query runs: every other statement, those the engine's readonly
// lets through (table functions, KILL, INTO OUTFILE, a second statement)
// among them, exits 2 and changes nothing.
func TestSQLReadOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded store")
	}
	work := t.TempDir()
	store := filepath.Join(work, "store")
	makeStore(t, store)
	file := filepath.Join(work, "written.txt")
	for _, tc := range []struct{ sql, want string }{
		{"INSERT INTO FUNCTION file('" + file + "', 'CSV') SELECT 1", "got INSERT"},
		{"KILL QUERY WHERE 1", "got KILL"},
		{"INSERT INTO verdicts SELECT * FROM verdicts", "got INSERT"},
		{"DROP TABLE verdicts", "got DROP"},
		{"ALTER TABLE verdicts DELETE WHERE 1", "got ALTER"},
		{"SYSTEM DROP MARK CACHE", "got SYSTEM"},
		{"SET readonly = 0", "got SET"},
		{"OPTIMIZE TABLE verdicts FINAL", "got OPTIMIZE"},
		{"CREATE TABLE t (a UInt8) ENGINE = Memory", "got CREATE"},
		{"SHOW TABLES", "SELECT name FROM system.tables"},
		{"DESCRIBE verdicts", "FROM system.columns"},
		{"/* c */ ( INSERT INTO FUNCTION file('" + file + "', 'CSV') SELECT 1)", "got INSERT"},
		// Begin as a query: the engine refuses them, as one query.
		{"SELECT 1; INSERT INTO FUNCTION file('" + file + "', 'CSV') SELECT 1", "Code: 62"},
		{"SELECT 1 INTO OUTFILE '" + file + "'", "no INTO OUTFILE"},
		{"SELECT 1 FROM (SELECT 1) INTO OUTFILE '" + file + "'", "no INTO OUTFILE"},
		// A bracket that closes the subquery early starts no statement;
		// the error is the user's text's own, at its position there.
		{"SELECT 1) ; INSERT INTO FUNCTION file('" + file + "', 'CSV') SELECT 42; SELECT (1", "failed at position 9 ()): ) ;. Unmatched parentheses"},
		{"SELECT 1) ; KILL QUERY WHERE 1; SELECT (1", "Unmatched parentheses"},
		{"SELECT 1,\n  2 2", "(line 2, col 5)"},
		{"SELECT 1) INTO OUTFILE '" + file + "' --", "Unmatched parentheses"},
		// Reads the store only.
		{"SELECT * FROM file('/etc/hostname', 'LineAsString')", "reads the store only"},
		{"SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')", "readonly mode"},
		{"SELECT file('/etc/hostname')", "reads the store only"},
		{"WITH (SELECT FILE('/etc/hostname')) AS h SELECT h", "reads the store only"},
		{"SELECT `file`('/etc/hostname')", "reads the store only"},
		{"SELECT * APPLY file FROM (SELECT '/etc/hostname' AS p)", "reads the store only"},
		{"SELECT COLUMNS('p') APPLY(file) FROM (SELECT '/etc/hostname' AS p)", "reads the store only"},
		{"EXPLAIN SYNTAX SELECT file ('/etc/hostname')", "reads the store only"},
		{"(EXPLAIN SELECT 1)", "an EXPLAIN runs on its own"},
		{"SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString') SETTINGS readonly = 0", "no SETTINGS clause"},
		{"SELECT count() AS n FROM verdicts settings max_threads = 1", "no SETTINGS clause"},
		{"SELECT count() AS n FROM verdicts SETTINGS `readonly` = 0, \"max_threads\"=1", "no SETTINGS clause"},
		{"EXPLAIN SELECT 1 INTO OUTFILE '" + file + "'", "no INTO OUTFILE"},
	} {
		_, errOut, code := runCLI(t, "sql", "--store", store, tc.sql)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("sql %q: exit %d %q, want 2 and %q", tc.sql, code, errOut, tc.want)
		}
		if _, err := os.Stat(file); err == nil {
			t.Fatalf("sql %q wrote %s", tc.sql, file)
		}
	}
	for _, tc := range []struct{ sql, want string }{
		{"SELECT count() AS n FROM verdicts", `{"n":0}`},
		{"SELECT n FROM (\n-- the rules\nWITH 2 AS x SELECT x AS n);", `{"n":2}`},
		{"SELECT number AS n FROM numbers(3) ORDER BY n DESC -- last", "{\"n\":2}\n{\"n\":1}\n{\"n\":0}"},
		{"(SELECT 1 AS n)", `{"n":1}`},
		{"/* c */ SELECT 1 AS n", `{"n":1}`},
		{"EXPLAIN SELECT 1", `{"explain":`},
		{"SELECT 'x) INTO OUTFILE y; KILL' AS n", `{"n":"x) INTO OUTFILE y; KILL"}`},
		{"SELECT $$a'b)$$ AS n -- ) ; KILL", `{"n":"a'b)"}`},
		{"SELECT 1) UNION ALL (SELECT 2", `{"1":2}`},
		{"SELECT 'SETTINGS readonly = 0' AS n", `{"n":"SETTINGS readonly = 0"}`},
		{"SELECT 1 AS SETTINGS", `{"SETTINGS":1}`},
		{"SELECT 7 AS n; -- done\n/* really */", `{"n":7}`},
		{"SELECT 'a; -- b' AS n", `{"n":"a; -- b"}`},
		{"SELECT count(file) AS n FROM record_entries", `{"n":0}`},
		{"SELECT 'file(x)' AS file", `{"file":"file(x)"}`},
		{"EXPLAIN SYNTAX SELECT 1 AS settings", `{"explain":"SELECT 1 AS settings"}`},
	} {
		out, errOut, code := runCLI(t, "sql", "--store", store, "--format", "json", tc.sql)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("sql %q: exit %d %q %s, want 0 and %q", tc.sql, code, out, errOut, tc.want)
		}
	}
}

// A table with no rows is its header, so an empty answer is told from a
// command that printed nothing.
func TestSQLEmptyTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded store")
	}
	store := filepath.Join(t.TempDir(), "store")
	makeStore(t, store)
	out, errOut, code := runCLI(t, "sql", "--store", store, "SELECT rule_id, status FROM verdicts")
	if want := "┌─rule_id─┬─status─┐\n└─────────┴────────┘\n"; code != 0 || out != want {
		t.Errorf("exit %d %s, printed\n%q\nwant\n%q", code, errOut, out, want)
	}
	out, _, code = runCLI(t, "sql", "--store", store, "--format", "json", "SELECT rule_id FROM verdicts")
	if code != 0 || out != "" {
		t.Errorf("json: exit %d, printed %q, want nothing", code, out)
	}
}

// A directory the engine has not written is no store: sql and query refuse
// it, as a missing one, and leave it as it was.
func TestSQLNotAStore(t *testing.T) {
	work := t.TempDir()
	empty := filepath.Join(work, "empty")
	other := filepath.Join(work, "other")
	for _, d := range []string{empty, filepath.Join(other, "rules")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "notes.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	list := func(dir string) []string {
		var names []string
		filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
			names = append(names, p)
			return nil
		})
		return names
	}
	for _, dir := range []string{empty, other, filepath.Join(work, "missing")} {
		before := list(dir)
		for _, args := range [][]string{
			{"sql", "--store", dir, "SELECT 1"},
			{"query", "--rules", "../../examples/rules", "--store", dir, "--listen", "127.0.0.1:0"},
		} {
			_, errOut, code := runCLI(t, args...)
			want := "store.path (--store) " + dir + ": no store there"
			if code != exitBadInput || !strings.Contains(errOut, want) {
				t.Errorf("ponens %s: exit %d %q, want 2 and %q", strings.Join(args, " "), code, errOut, want)
			}
		}
		if after := list(dir); !slices.Equal(before, after) {
			t.Errorf("%s changed: %v, was %v", dir, after, before)
		}
	}
}

// The commands that write a store refuse a directory holding other files
// and no store, and leave it as it was.
func TestStoreNotAmongOtherFiles(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(other, "notes.md")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--rules", "../../examples/rules", "--out", t.TempDir(), "--store", other, "../../examples/traces"}, "--store " + other + ": not a store (no metadata/): give a new or empty directory, or a store ponens wrote: it holds other files"},
		{[]string{"check", "--rules", "../../examples/rules", "--out", t.TempDir(), "--store", file, "../../examples/traces"}, "--store " + file + ": not a store (no metadata/): give a new or empty directory, or a store ponens wrote: it is a file"},
		{[]string{"sink", "--store", other, "--url", "nats://127.0.0.1:1"}, "store.path (--store) " + other + ": not a store"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != exitBadInput || !strings.Contains(errOut, tc.want) {
			t.Errorf("ponens %s: exit %d %q, want 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	if entries, _ := os.ReadDir(other); len(entries) != 1 {
		t.Errorf("%s now holds %d entries", other, len(entries))
	}
}

// A table is drawn as a table however wide its rows, without row numbers.
func TestSQLTableShape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded store")
	}
	store := filepath.Join(t.TempDir(), "store")
	makeStore(t, store)
	out, errOut, code := runCLI(t, "sql", "--store", store, "SELECT repeat('x', 300) AS wide, 1 AS b, 2 AS c, 3 AS d, 4 AS e, 5 AS f")
	if code != 0 || !strings.HasPrefix(out, "┌─wide─") || strings.Contains(out, "Row 1:") || strings.Contains(out, "1. │") {
		t.Errorf("exit %d %s, printed\n%s", code, errOut, out)
	}
}

// A store another process has open is refused in one line of ponens',
// exit 3, with nothing of the engine's on stdout.
func TestSQLStoreInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded store")
	}
	store := filepath.Join(t.TempDir(), "store")
	makeStore(t, store)
	f, err := os.Create(filepath.Join(store, "status")) // the lock the engine takes
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "sql", "--store", store, "SELECT 1")
	if code != exitUnavailable || out != "" || !strings.Contains(errOut, "the store is open in another process") || strings.Contains(errOut, "Code: 76") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
