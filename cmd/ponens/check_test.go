package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files of the check tests")

const checkTestdata = "testdata/check"

// goldenTraces are the trace files of testdata/check/traces, in the order
// the golden check lists them.
var goldenTraces = []string{"a/run.jsonl", "b/run.jsonl", "open.jsonl", "multi.jsonl"}

// copyTraces copies testdata/check/traces into dir/traces, so that the
// streams a check writes beside them land in dir, and returns the copies'
// paths in goldenTraces order.
func copyTraces(t *testing.T, dir string) []string {
	t.Helper()
	src := filepath.Join(checkTestdata, "traces")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".verdicts.jsonl") {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, "traces", rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(goldenTraces))
	for i, p := range goldenTraces {
		paths[i] = filepath.Join(dir, "traces", filepath.FromSlash(p))
	}
	return paths
}

// checkArgs is the golden check's command line, on traces, into out.
func checkArgs(out string, traces []string, extra ...string) []string {
	args := append([]string{"check", "--rules", filepath.Join(checkTestdata, "rules.yaml"), "--out", out}, extra...)
	return append(args, traces...)
}

// TestCheckGolden runs the check of testdata/check and compares
// summary.json, every verdict stream and the printed summary with the
// golden files under testdata/check/golden, byte for byte. Run with
// -update to rewrite them.
func TestCheckGolden(t *testing.T) {
	dir := t.TempDir()
	traces := copyTraces(t, dir)
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runPonens(t, checkArgs(out, traces, "--enforce")...)
	if code != exitViolated {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitViolated, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr not empty:\n%s", stderr)
	}
	golden := filepath.Join(checkTestdata, "golden")
	files := map[string]string{ // golden name → file written
		"summary.json": filepath.Join(out, "summary.json"),
		"stdout.txt":   "",
	}
	for _, name := range []string{"a/run", "b/run", "open", "multi.m-1", "multi.m_2"} {
		rel := "traces/" + name + ".verdicts.jsonl"
		files[rel] = filepath.Join(dir, filepath.FromSlash(rel))
	}
	// Every stream written is one we know of.
	filepath.WalkDir(filepath.Join(dir, "traces"), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".verdicts.jsonl") {
			rel, _ := filepath.Rel(dir, path)
			if _, ok := files[filepath.ToSlash(rel)]; !ok {
				t.Errorf("unexpected stream %s", rel)
			}
		}
		return nil
	})
	for name, path := range files {
		var got []byte
		if path == "" {
			got = []byte(strings.ReplaceAll(stdout, dir, "$TMP"))
		} else {
			var err error
			if got, err = os.ReadFile(path); err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
		}
		want := filepath.Join(golden, filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(want, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		w, err := os.ReadFile(want)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, w) {
			t.Errorf("%s differs from %s (run with -update to accept):\n got:\n%s\nwant:\n%s", name, want, got, w)
		}
	}
}

// TestCheckStreamsFoldToMatrix reads what a check wrote with the schema's
// readers and checks that every verdict stream, found through its path in
// the trace manifest, folds to its column of the matrix.
func TestCheckStreamsFoldToMatrix(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "reports", "today")
	runPonens(t, checkArgs(out, copyTraces(t, dir))...)
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.DecodeSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Traces) != 5 || len(s.Rules) != 3 {
		t.Fatalf("%d traces, %d rules; want 5 and 3", len(s.Traces), len(s.Rules))
	}
	text := map[string]string{}
	for _, r := range s.Rules {
		text[r.ID] = r.Text
	}
	seen := map[string]bool{}
	for j, tr := range s.Traces {
		if s.Matrix.Traces[j] != tr.ID {
			t.Errorf("matrix.traces[%d] = %s, manifest has %s", j, s.Matrix.Traces[j], tr.ID)
		}
		if seen[tr.ID] {
			t.Errorf("trace id %s twice", tr.ID)
		}
		seen[tr.ID] = true
		f, err := os.Open(filepath.Join(out, filepath.FromSlash(tr.Verdicts)))
		if err != nil {
			t.Fatalf("trace %s: its verdicts path does not resolve from summary.json: %v", tr.ID, err)
		}
		stream, err := schema.DecodeVerdicts(f)
		f.Close()
		if err != nil {
			t.Fatalf("trace %s: %v", tr.ID, err)
		}
		final := schema.Fold(stream)
		for i, rule := range s.Matrix.Rules {
			got, ok := final[rule]
			if !ok {
				got = schema.StatusSatisfied
			}
			if got != s.Matrix.Cells[i][j] {
				t.Errorf("%s × %s: the stream folds to %s, the cell is %s", rule, tr.ID, got, s.Matrix.Cells[i][j])
			}
		}
		for _, v := range stream {
			if v.RunID != tr.RunID {
				t.Errorf("trace %s: a verdict of run %s", tr.ID, v.RunID)
			}
			if v.Cause != nil && !strings.Contains(text[v.Rule.ID], v.Cause.Subformula) {
				t.Errorf("trace %s: cause %q is not in %q", tr.ID, v.Cause.Subformula, text[v.Rule.ID])
			}
		}
	}
	// Without --enforce every rule only observes.
	for _, r := range s.Rules {
		if r.Mode != schema.ModeObserve {
			t.Errorf("rule %s: mode %s without --enforce", r.ID, r.Mode)
		}
	}
	// not_applicable is reported in matrix.results.
	if got := s.Matrix.Results[1][2]; got != "not_applicable" {
		t.Errorf("research_before_edit on open.jsonl: %s, want not_applicable", got)
	}
}

func TestCheckContentHash(t *testing.T) {
	hash := func(t *testing.T, rules string, extra []string, edit func(traces []string)) string {
		t.Helper()
		dir := t.TempDir()
		traces := copyTraces(t, dir)
		if edit != nil {
			edit(traces)
		}
		args := []string{"check", "--json", "--out", filepath.Join(dir, "out")}
		if rules != "" {
			path := filepath.Join(dir, "rules.yaml")
			if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--rules", path)
		}
		args = append(append(args, extra...), traces...)
		stdout, stderr, code := runPonens(t, args...)
		if code == exitBadInput {
			t.Fatalf("exit 2: %s", stderr)
		}
		s, err := schema.DecodeSummary([]byte(stdout))
		if err != nil {
			t.Fatal(err)
		}
		return s.ContentHash
	}
	rules, err := os.ReadFile(filepath.Join(checkTestdata, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := hash(t, string(rules), nil, nil)
	if again := hash(t, string(rules), nil, nil); again != base {
		t.Errorf("the hash changed with nothing changed: %s, then %s", base, again)
	}
	// The same rules, written differently, are the same rules.
	if reformatted := hash(t, "# a comment\n"+strings.ReplaceAll(string(rules), "G(GitCommit → P(", "G(GitCommit -> P("), nil, nil); reformatted != base {
		t.Errorf("the hash changed with the formula respelled in ASCII")
	}
	// Re-spacing a trace file changes no event.
	respaced := hash(t, string(rules), nil, func(traces []string) {
		data, _ := os.ReadFile(traces[0])
		os.WriteFile(traces[0], bytes.ReplaceAll(data, []byte(`,"`), []byte(`, "`)), 0o644)
	})
	if respaced != base {
		t.Errorf("the hash changed with a trace file re-spaced")
	}
	changes := map[string]string{
		"a trace changed": hash(t, string(rules), nil, func(traces []string) {
			data, _ := os.ReadFile(traces[2])
			os.WriteFile(traces[2], bytes.Replace(data, []byte("README.md"), []byte("NOTES.md"), 1), 0o644)
		}),
		"a rule added":                           hash(t, string(rules), []string{"--formula", "G(¬Deploy)", "--id", "no_deploy"}, nil),
		"a rule kept its id and changed formula": hash(t, strings.Replace(string(rules), "formula: F RunTests", "formula: F GitCommit", 1), nil, nil),
		"modes enforced":                         hash(t, string(rules), []string{"--enforce"}, nil),
	}
	for what, h := range changes {
		if h == base {
			t.Errorf("%s: the hash did not change", what)
		}
	}
}

func TestCheckExitCodes(t *testing.T) {
	dir := t.TempDir()
	traces := copyTraces(t, dir)
	rules := filepath.Join(checkTestdata, "rules.yaml")
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"v":1,"runId":"r","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`+"\n"+
		`{"v":1,"runId":"r","seq":2,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"id":1}}`+"\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, []byte("\n"), 0o644)
	embedding := func(name, formula string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(`{"trace_id": "`+name+`", "actions": [{"id": 1, "type": "GitCommit"}],
 "policies": [{"policy_id": "p", "formula": "`+formula+`"}]}`), 0o644)
		return p
	}
	p1, p2 := embedding("p1.json", "G(GitCommit → P(RunTests))"), embedding("p2.json", "G(GitCommit → P(Verify))")
	tests := []struct {
		name string
		args []string
		code int
		msg  []string // substrings of stderr
	}{
		{"all satisfied", []string{"check", "--rules", rules, "--out", filepath.Join(dir, "o1"), traces[0]}, exitOK, nil},
		{"some violated", []string{"check", "--rules", rules, "--out", filepath.Join(dir, "o2"), traces[0], traces[1]}, exitViolated, nil},
		// An obligation open when the stream stops is unresolved; its
		// finite-trace result is fail, which fails the check.
		{"unresolved, failing", []string{"check", "--rules", rules, "--out", filepath.Join(dir, "o3"), traces[2]}, exitViolated, nil},
		{"unresolved, passing", []string{"check", "--formula", "G(GitCommit → P(RunTests))", "--formula", "F(RunTests) ∨ G(¬EditFile)", "--out", filepath.Join(dir, "o3"), traces[2]}, exitOK, nil},
		{"fail on unresolved", []string{"check", "--formula", "G(GitCommit → P(RunTests))", "--formula", "F(RunTests) ∨ G(¬EditFile)", "--fail-on", "unresolved", "--out", filepath.Join(dir, "o3"), traces[2]}, exitViolated, nil},
		{"fail on what", []string{"check", "--rules", rules, "--fail-on", "pending", traces[2]}, exitBadInput, []string{`--fail-on "pending": expected violated or unresolved`}},
		{"bad trace line", []string{"check", "--rules", rules, "--out", filepath.Join(dir, "o4"), traces[0], bad}, exitBadInput, []string{bad + ":2", "action.type"}},
		{"unknown formula syntax", []string{"check", "--formula", "G(a ∧ ∧ b)", "--out", filepath.Join(dir, "o5"), traces[0]}, exitBadInput, []string{"--formula", "syntax"}},
		{"rule the monitor cannot run", []string{"check", "--formula", "G(GitCommit → P(F RunTests))", "--id", "odd", "--out", filepath.Join(dir, "o6"), traces[0]},
			exitBadInput, []string{"--formula:1:1: rule odd: cannot be monitored"}},
		{"empty trace", []string{"check", "--rules", rules, "--out", filepath.Join(dir, "o7"), traces[0], empty}, exitBadInput, []string{empty + ": no events"}},
		{"missing trace", []string{"check", "--rules", rules, filepath.Join(dir, "nope.jsonl")}, exitBadInput, []string{"nope.jsonl"}},
		{"no trace", []string{"check", "--rules", rules}, exitBadInput, []string{"give at least one trace file"}},
		{"no rules", []string{"check", traces[0]}, exitBadInput, []string{"--formula or --rules", "is not a reference trace embedding policies"}},
		{"embedded policy defined twice", []string{"check", "--out", filepath.Join(dir, "o8"), p1, p2}, exitBadInput,
			[]string{"policy p is defined differently in " + p1 + " (G(GitCommit → P(RunTests))) and " + p2 + " (G(GitCommit → P(Verify)))"}},
		{"embedded policy", []string{"check", "--out", filepath.Join(dir, "o8"), p1}, exitViolated, nil},
		{"trace twice", []string{"check", "--rules", rules, traces[0], filepath.Join(filepath.Dir(traces[0]), ".", "run.jsonl")}, exitBadInput, []string{"is given twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runPonens(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			for _, m := range tt.msg {
				if !strings.Contains(stderr, m) {
					t.Errorf("stderr does not mention %q:\n%s", m, stderr)
				}
			}
		})
	}
	// Bad input writes nothing.
	for _, o := range []string{"o4", "o5", "o6", "o7"} {
		if _, err := os.Stat(filepath.Join(dir, o)); !os.IsNotExist(err) {
			t.Errorf("%s: written despite bad input", o)
		}
	}
}

// TestCheckPaths checks that same-named traces get distinct ids and that
// the verdicts paths resolve from summary.json when it is written far from
// the traces, and that --json prints what summary.json holds.
func TestCheckPaths(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(checkTestdata, "traces", "a", "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var traces []string
	for _, sub := range []string{"in/x/run.jsonl", "in/y/run.jsonl", "in/deep/x/run.jsonl"} {
		p := filepath.Join(dir, filepath.FromSlash(sub))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, src, 0o644)
		traces = append(traces, p)
	}
	out := filepath.Join(dir, "elsewhere", "deeper")
	stdout, stderr, code := runPonens(t, append([]string{"check", "--json", "--formula", "G(GitCommit → P RunTests)", "--out", out}, traces...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	written, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(written) {
		t.Errorf("--json printed something else than summary.json:\n%s\nvs\n%s", stdout, written)
	}
	s, err := schema.DecodeSummary(written)
	if err != nil {
		t.Fatal(err)
	}
	want := []schema.TraceManifestEntry{
		{ID: "in/x/run.jsonl", Verdicts: "../../in/x/run.verdicts.jsonl"},
		{ID: "y/run.jsonl", Verdicts: "../../in/y/run.verdicts.jsonl"},
		{ID: "deep/x/run.jsonl", Verdicts: "../../in/deep/x/run.verdicts.jsonl"},
	}
	for i, w := range want {
		got := s.Traces[i]
		if got.ID != w.ID || got.Verdicts != w.Verdicts {
			t.Errorf("trace %d: id %s, verdicts %s; want %s, %s", i, got.ID, got.Verdicts, w.ID, w.Verdicts)
		}
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(got.Verdicts))); err != nil {
			t.Errorf("trace %s: %v", got.ID, err)
		}
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	if p := newProgress(&b, 100, progressMin, "checking", "traces"); p != nil {
		t.Error("a progress bar on a buffer")
	}
	var none *progress
	none.tick() // a nil bar draws nothing
	none.clear()
	p := &progress{w: &b, verb: "checking", unit: "traces", total: 2}
	p.tick()
	p.tick()
	p.clear()
	if got, want := b.String(), "\rchecking [===============               ] 1/2 traces\rchecking [==============================] 2/2 traces\r\x1b[K"; got != want {
		t.Errorf("drew %q, want %q", got, want)
	}
}
