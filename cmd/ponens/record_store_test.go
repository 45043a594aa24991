package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/sink/chdb"
)

// recordService stores the record fixture (examples/record/payments.json,
// run tr-payments), a copy declaring trace spec 2.0 (run tr-record-newer)
// and one with a decomposition whose complete is not a boolean (run
// tr-record-warned) with `ponens check --store`, serves that store on
// loopback as `ponens query` does, with the token s3cret required, and
// returns the working directory (holding record/, the fixture) and the
// service's URL.
func recordService(t *testing.T) (string, string) {
	t.Helper()
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "record"), os.DirFS("../../examples/record")); err != nil {
		t.Fatal(err)
	}
	newer := strings.NewReplacer(`"spec_version": "1.13"`, `"spec_version": "2.0"`, `"trace_id": "tr-payments"`, `"trace_id": "tr-record-newer"`).
		Replace(readFile(t, "../../examples/record/payments.json"))
	if err := os.WriteFile(filepath.Join(work, "newer.json"), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	warned := strings.NewReplacer(`"complete": true`, `"complete": "yes"`, `"trace_id": "tr-payments"`, `"trace_id": "tr-record-warned"`).
		Replace(readFile(t, "../../examples/record/payments.json"))
	if err := os.WriteFile(filepath.Join(work, "warned.json"), []byte(warned), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(work, "store")
	if _, errOut, code := runCLI(t, "check", "--rules", "../../examples/rules", "--store", store, "--out", filepath.Join(work, "out"),
		filepath.Join(work, "record", "payments.json"), filepath.Join(work, "newer.json"), filepath.Join(work, "warned.json")); code > exitViolated {
		t.Fatalf("check --store: exit %d\n%s", code, errOut)
	}
	e, err := chdb.Open(chdb.Options{Path: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	// check --store kept the record entries of the runs the record reads,
	// one row per entry of the trace (ten), and none of the newer spec's.
	out, err := e.Query([]byte("SELECT run_id, count() FROM record_entries FINAL GROUP BY run_id ORDER BY run_id"), "TSV")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "tr-payments\t10\ntr-record-warned\t10\n" {
		t.Errorf("record_entries rows per run:\n%s", got)
	}
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	cfg := config.Default()
	sum := sha256.Sum256([]byte("s3cret"))
	cfg.Query.Tokens = []config.QueryToken{{Name: "ci", SHA256: hex.EncodeToString(sum[:]), Scope: "read"}}
	qs, err := queryServer(cfg, set, chdb.Querier{E: e}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(qs.Handler())
	t.Cleanup(web.Close)
	return work, web.URL
}

// `ponens trace symbols|symbol --server URL --run ID` (the binary, against
// the query service on loopback over the stored run) prints what the same
// command prints over the trace file, text and JSON, with the same exit
// code: the index (with requirements read here), known and unknown
// symbols, a symbol in two files with and without --file, region maps
// cut by --limit and narrowed by every --where form, bad flags; and the
// same warnings on stderr for what the record cannot read.
func TestRecordQueryOverService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the embedded store")
	}
	work, web := recordService(t)
	const tr = "record/payments.json"
	srv := []string{"--server", web, "--token", "s3cret", "--run", "tr-payments"}
	for _, c := range [][]string{
		{"symbols"},
		{"symbols", "--json"},
		{"symbols", "--file", "record/requirements.yaml", "--json"},
		{"symbols", "--file", "record/requirements.yaml"},
		{"symbol", "step"},
		{"symbol", "step", "--json"},
		{"symbol", "invoice_total", "--json"},
		{"symbol", "refund", "--json"},
		{"symbol", "validate"},
		{"symbol", "validate", "--file", "forms/b.py", "--json"},
		{"symbol", "validate", "--file", "forms/a.py"},
		{"symbol", "nosuch", "--json"},
		{"symbol", "nosuch"},
		{"symbol", "nosuch", "--file", "x.py", "--json"},
		{"symbol", "step", "--regions", "--json"},
		{"symbol", "step", "--regions"},
		{"symbol", "step", "--limit", "2", "--json"},
		{"symbol", "step", "--regions", "--limit", "2"},
		{"symbol", "step", "--limit", "0", "--json"},
		{"symbol", "step", "--where", "a.c = Capture", "--json"},
		{"symbol", "step", "--where", "outcome:Rejected", "--json"},
		{"symbol", "step", "--where", "diverged", "--json"},
		{"symbol", "step", "--where", "raised"},
		{"symbol", "invoice_total", "--where", "raised", "--json"},
		{"symbol", "step", "--where", " "},
		{"symbol", "step", "--limit", "-1"},
		{"warned", "symbols"},
		{"warned", "symbol", "invoice_total", "--json"},
	} {
		trace, run := tr, srv
		if c[0] == "warned" { // what the record cannot read is warned about on stderr
			c, trace, run = c[1:], "warned.json", append(srv, "--run", "tr-record-warned")
		}
		file := runBinary(t, work, nil, append([]string{"trace", c[0], trace}, c[1:]...)...)
		over := runBinary(t, work, nil, append(append([]string{"trace"}, c...), run...)...)
		if over.stdout != file.stdout || over.code != file.code || (file.code == 0 && over.stderr != file.stderr) {
			t.Errorf("ponens trace %s --run: exit %d\n%s%s\nover the trace file: exit %d\n%s%s", strings.Join(c, " "), over.code, over.stdout, over.stderr, file.code, file.stdout, file.stderr)
		}
		if file.code == 0 && file.stdout == "" || trace == "warned.json" && !strings.Contains(file.stderr, ": warning: ") {
			t.Errorf("ponens trace %s %s: exit %d, printed %q, warned %q", strings.Join(c, " "), trace, file.code, file.stdout, file.stderr)
		}
	}
}

// Over the query service, `ponens trace` refuses what it cannot answer
// with exit 2 naming why (--cwd, a TRACE beside --run, --server without
// --run, an unknown run, a trace spec the record query does not read, a
// missing token, a symbol in two files), and a service that does not
// answer with exit 3.
func TestRecordQueryOverServiceRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the embedded store")
	}
	work, web := recordService(t)
	auth := []string{"--server", web, "--token", "s3cret"}
	versionErr := runBinary(t, work, nil, "trace", "symbols", "newer.json")
	if versionErr.code != exitBadInput || !strings.Contains(versionErr.stderr, "newer.json: trace spec 2.0 is newer") {
		t.Fatalf("trace symbols newer.json: exit %d %s", versionErr.code, versionErr.stderr)
	}
	_, needed, _ := strings.Cut(strings.TrimSpace(versionErr.stderr), "newer.json: ")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{append([]string{"symbols", "--run", "tr-payments", "--cwd", "record/checkout"}, auth...), exitBadInput, "--cwd cannot be compared over the query service"},
		{append([]string{"symbol", "--run", "tr-payments", "step", "--cwd", "record/checkout"}, auth...), exitBadInput, "freshness rests on the trace alone"},
		{append([]string{"symbols", "--run", "tr-payments", "record/payments.json"}, auth...), exitBadInput, "with --run give no argument"},
		{append([]string{"symbol", "--run", "tr-payments"}, auth...), exitBadInput, "with --run give one SYMBOL"},
		{append([]string{"symbols"}, auth...), exitBadInput, "give --run ID"},
		{append([]string{"symbols", "--run", "no-such-run"}, auth...), exitBadInput, `not_found: run "no-such-run": the store has no event of it`},
		{append([]string{"symbols", "--run", "tr-record-newer"}, auth...), exitBadInput, `run "tr-record-newer": ` + needed},
		{append([]string{"symbol", "--run", "tr-record-newer", "step"}, auth...), exitBadInput, needed},
		{[]string{"symbols", "--run", "tr-payments", "--server", web}, exitBadInput, "unauthorized"},
		{append([]string{"symbol", "--run", "tr-payments", "validate"}, auth...), exitBadInput, "validate is recorded in 2 files (forms/a.py, forms/b.py)"},
		{[]string{"symbols", "--run", "tr-payments", "--server", "http://" + freeAddr(t)}, exitUnavailable, "did not answer"},
	} {
		r := runBinary(t, work, nil, append([]string{"trace"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("ponens trace %s: exit %d %q (stdout %q), want %d with %q", strings.Join(c.args, " "), r.code, r.stderr, r.stdout, c.code, c.want)
		}
	}
}
