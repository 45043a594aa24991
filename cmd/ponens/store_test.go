package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink/chdb"
)

// The stored run_rule_status, with the rules that never emitted a verdict
// counted as satisfied, is the matrix `ponens check` writes for the same
// traces; a replay of every verdict, cut into other batches, changes no
// cell, whatever order its batches arrive in.
func TestStoreMatchesCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the embedded store")
	}
	work := t.TempDir()
	traces := filepath.Join(work, "traces")
	if err := os.CopyFS(traces, os.DirFS("../../examples/traces")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "out")
	rules, err := filepath.Abs("../../examples/rules")
	if err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, work, nil, "check", "--rules", rules, "--out", out, traces); r.code != 1 {
		t.Fatalf("ponens check: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum schema.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	var stream []schema.VerdictEvent
	for _, tr := range sum.Traces {
		f, err := os.Open(filepath.Join(out, filepath.FromSlash(tr.Verdicts)))
		if err != nil {
			t.Fatal(err)
		}
		vs, err := schema.DecodeVerdicts(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, vs...)
	}
	if len(stream) == 0 {
		t.Fatal("the examples produced no verdicts")
	}

	e, err := chdb.Open(chdb.Options{Path: filepath.Join(work, "store")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := chdb.Migrate(e); err != nil {
		t.Fatal(err)
	}
	store := chdb.NewStore(e)
	commit := func(idx []int) {
		a := store.Appender()
		for _, i := range idx {
			if err := a.AppendVerdict(&stream[i], schema.StreamMeta{Seq: uint64(i + 1), Time: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	all := make([]int, len(stream))
	for i := range all {
		all[i] = i
	}
	commit(all)
	compareMatrix(t, e, &sum)
	// The replay, backwards in batches of three: a cell's latest verdict
	// must win by its seq, not by when it was inserted.
	slices.Reverse(all)
	for i := 0; i < len(all); i += 3 {
		commit(all[i:min(i+3, len(all))])
	}
	compareMatrix(t, e, &sum)
}

// compareMatrix reads every rule × run cell from run_rule_status and
// compares it with the summary's matrix.
func compareMatrix(t *testing.T, e *chdb.Engine, sum *schema.Summary) {
	t.Helper()
	runs := make([]string, len(sum.Traces))
	for j, tr := range sum.Traces {
		runs[j] = tr.RunID
	}
	q := fmt.Sprintf(`SELECT m.rule, m.run, if(empty(s.run_id), 'satisfied', toString(s.status))
FROM (SELECT rule, run FROM (SELECT arrayJoin(%s) AS rule) AS r CROSS JOIN (SELECT arrayJoin(%s) AS run) AS x) AS m
LEFT JOIN (SELECT run_id, rule_id, status FROM run_rule_status FINAL) AS s ON s.run_id = m.run AND s.rule_id = m.rule`,
		sqlArray(sum.Matrix.Rules), sqlArray(runs))
	data, err := e.Query([]byte(q), "TabSeparated")
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(line, "\t")
		got[[2]string{f[0], f[1]}] = f[2]
	}
	cells := 0
	for i, rule := range sum.Matrix.Rules {
		for j, run := range runs {
			cells++
			if want := string(sum.Matrix.Cells[i][j]); got[[2]string{rule, run}] != want {
				t.Errorf("%s × %s: the store says %q, ponens check %q", rule, run, got[[2]string{rule, run}], want)
			}
		}
	}
	if len(got) != cells {
		t.Errorf("the store gave %d cells, the matrix has %d", len(got), cells)
	}
}

// sqlArray is a ClickHouse array literal of strings.
func sqlArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// The store that `ponens check --store` wrote gives, through the
// run_rule_matrix view and with the rules it holds itself (rule_versions),
// exactly the matrix of check's summary.json.
func TestStoreMatrixView(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the embedded store")
	}
	work := t.TempDir()
	traces := filepath.Join(work, "traces")
	if err := os.CopyFS(traces, os.DirFS("../../examples/traces")); err != nil {
		t.Fatal(err)
	}
	out, store := filepath.Join(work, "out"), filepath.Join(work, "store")
	rules, err := filepath.Abs("../../examples/rules")
	if err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, work, nil, "check", "--rules", rules, "--out", out, "--store", store, traces); r.code != 1 {
		t.Fatalf("ponens check --store: exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum schema.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	e, err := chdb.Open(chdb.Options{Path: store})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Query([]byte("SELECT rule_id, run_id, status FROM run_rule_matrix ORDER BY rule_id, run_id"), "TabSeparated")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, rule := range sum.Matrix.Rules {
		for j, tr := range sum.Traces {
			want = append(want, rule+"\t"+tr.RunID+"\t"+string(sum.Matrix.Cells[i][j]))
		}
	}
	slices.Sort(want)
	if g := strings.Split(strings.TrimSpace(string(got)), "\n"); !slices.Equal(g, want) {
		t.Errorf("run_rule_matrix on the store of ponens check --store:\n%s\nwant (summary.json's matrix):\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}
