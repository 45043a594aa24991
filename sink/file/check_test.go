package file

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// engine compiles rules given as id=formula.
func engine(t *testing.T, rules ...string) *monitor.Engine {
	t.Helper()
	set := &ruleset.Set{}
	for _, r := range rules {
		id, text, _ := strings.Cut(r, "=")
		rule, probs := ruleset.FromFormula(id, text)
		if probs != nil {
			t.Fatal(probs)
		}
		rule.Description = "rule " + id
		set.Add(rule)
	}
	eng, errs := monitor.NewEngine(set)
	if errs != nil {
		t.Fatal(errs)
	}
	return eng
}

// events builds a run: run.start, an action per type, then the closing
// event (none when end is "").
func events(runID string, end schema.EventType, actions ...string) []schema.Event {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	evs := []schema.Event{{V: 1, RunID: runID, Seq: 1, TS: ts, Type: schema.TypeRunStart, Start: &schema.RunStart{TraceID: runID}}}
	for i, a := range actions {
		evs = append(evs, schema.Event{V: 1, RunID: runID, Seq: uint64(len(evs) + 1), TS: ts, Type: schema.TypeAction,
			Action: &schema.Action{ID: int64(i + 1), Type: a, Status: "completed"}})
	}
	if end != "" {
		evs = append(evs, schema.Event{V: 1, RunID: runID, Seq: uint64(len(evs) + 1), TS: ts, Type: end, End: &schema.RunEnd{}})
	}
	return evs
}

// monitorRun runs evs through a fresh run of eng and returns the Trace to
// add.
func monitorRun(t *testing.T, eng *monitor.Engine, id, verdicts string, evs []schema.Event) Trace {
	t.Helper()
	run := eng.NewRun(evs[0].RunID)
	var stream []schema.VerdictEvent
	for i := range evs {
		vs, err := run.Add(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, vs...)
	}
	if !run.Ended() {
		stream = append(stream, run.End()...)
	}
	return Trace{ID: id, RunID: evs[0].RunID, Verdicts: verdicts, Events: evs, Stream: stream, Results: run.Results()}
}

func TestCheckSummary(t *testing.T) {
	dir := t.TempDir()
	eng := engine(t,
		"tests_before_commit=G(GitCommit → P(RunTests ∧ completed))",
		"eventually_tests=F RunTests",
		"always=⊤",
	)
	c, err := NewCheck(eng.Rules(), filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	traces := []Trace{
		monitorRun(t, eng, "a/run.jsonl", filepath.Join(dir, "a", "run.verdicts.jsonl"), events("ra", schema.TypeRunFinish, "RunTests", "GitCommit")),
		monitorRun(t, eng, "b/run.jsonl", filepath.Join(dir, "b", "run.verdicts.jsonl"), events("rb", schema.TypeRunError, "GitCommit")),
		monitorRun(t, eng, "open.jsonl", filepath.Join(dir, "open.verdicts.jsonl"), events("ro", "", "EditFile")),
	}
	for _, tr := range traces {
		if err := c.AddTrace(tr); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(tr.Verdicts), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteVerdicts(tr.Verdicts, tr.Stream); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteSummary(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.SummaryPath())
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.DecodeSummary(data)
	if err != nil {
		t.Fatalf("DecodeSummary refuses what WriteSummary wrote: %v", err)
	}

	if got, want := s.Matrix.Rules, []string{"tests_before_commit", "eventually_tests", "always"}; !equal(got, want) {
		t.Errorf("matrix.rules = %v, want %v", got, want)
	}
	if got, want := s.Matrix.Traces, []string{"a/run.jsonl", "b/run.jsonl", "open.jsonl"}; !equal(got, want) {
		t.Errorf("matrix.traces = %v, want %v", got, want)
	}
	wantCells := [][]schema.VerdictStatus{
		{"satisfied", "violated", "satisfied"},
		{"satisfied", "unresolved", "unresolved"},
		{"satisfied", "satisfied", "satisfied"},
	}
	wantResults := [][]string{
		{"pass", "fail", "not_applicable"},
		{"pass", "fail", "fail"},
		{"pass", "pass", "pass"},
	}
	for i := range wantCells {
		if !equal(s.Matrix.Cells[i], wantCells[i]) {
			t.Errorf("cells[%d] = %v, want %v", i, s.Matrix.Cells[i], wantCells[i])
		}
		if !equal(s.Matrix.Results[i], wantResults[i]) {
			t.Errorf("results[%d] = %v, want %v", i, s.Matrix.Results[i], wantResults[i])
		}
	}
	if want := (schema.Counts{"satisfied": 6, "violated": 1, "pending": 0, "unresolved": 2}); !equalCounts(s.Counts, want) {
		t.Errorf("counts = %v, want %v", s.Counts, want)
	}
	wantTraces := []schema.TraceManifestEntry{
		{ID: "a/run.jsonl", RunID: "ra", Events: 4, Outcome: "completed", Verdicts: "../a/run.verdicts.jsonl"},
		{ID: "b/run.jsonl", RunID: "rb", Events: 3, Outcome: "errored", Verdicts: "../b/run.verdicts.jsonl"},
		{ID: "open.jsonl", RunID: "ro", Events: 2, Outcome: "canceled", Verdicts: "../open.verdicts.jsonl"},
	}
	for i, w := range wantTraces {
		if s.Traces[i] != w {
			t.Errorf("traces[%d] = %+v, want %+v", i, s.Traces[i], w)
		}
	}
	r := s.Rules[0]
	var formula bytes.Buffer
	json.Compact(&formula, r.Formula)
	r.Formula = formula.Bytes()
	if r.ID != "tests_before_commit" || r.Description != "rule tests_before_commit" || r.Mode != schema.ModeObserve ||
		r.Text != "G(GitCommit → P(RunTests ∧ completed))" || !strings.HasPrefix(string(r.Formula), `{"kind":"unary","op":"G"`) {
		t.Errorf("rules[0] = %+v", r)
	}
	if !strings.HasPrefix(s.ContentHash, "sha256:") || len(s.ContentHash) != len("sha256:")+64 {
		t.Errorf("contentHash = %q", s.ContentHash)
	}

	// Every stream reads back and folds to its column.
	for j, tm := range s.Traces {
		f, err := os.Open(filepath.Join(filepath.Dir(c.SummaryPath()), filepath.FromSlash(tm.Verdicts)))
		if err != nil {
			t.Fatal(err)
		}
		stream, err := schema.DecodeVerdicts(f)
		f.Close()
		if err != nil {
			t.Fatalf("DecodeVerdicts refuses what WriteVerdicts wrote: %v", err)
		}
		final := schema.Fold(stream)
		for i, rule := range s.Matrix.Rules {
			if got := schema.FinalStatus(final, rule); got != s.Matrix.Cells[i][j] {
				t.Errorf("%s × %s: stream folds to %s, cell is %s", rule, tm.ID, got, s.Matrix.Cells[i][j])
			}
		}
	}
}

func TestCheckEmpty(t *testing.T) {
	c, err := NewCheck(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := EncodeSummary(&b, c.Summary()); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b.Bytes(), &m)
	for _, key := range []string{"rules", "traces"} {
		if _, ok := m[key].([]any); !ok {
			t.Errorf("%s is %v, want []", key, m[key])
		}
	}
	want := map[string]any{"satisfied": 0.0, "violated": 0.0, "pending": 0.0, "unresolved": 0.0}
	got, _ := m["counts"].(map[string]any)
	if len(got) != 4 {
		t.Errorf("counts = %v, want %v", got, want)
	}
	if _, err := schema.DecodeSummary(b.Bytes()); err != nil {
		t.Error(err)
	}
}

func TestAddTraceRefuses(t *testing.T) {
	eng := engine(t, "r1=G(GitCommit → P RunTests)", "r2=F RunTests")
	good := monitorRun(t, eng, "t", "t.verdicts.jsonl", events("run", schema.TypeRunFinish, "GitCommit"))
	if len(good.Stream) == 0 {
		t.Fatal("want a stream")
	}
	tests := []struct {
		name   string
		change func(tr *Trace)
		want   string
	}{
		{"empty id", func(tr *Trace) { tr.ID = "" }, `trace id "" is empty or already taken`},
		{"taken id", func(tr *Trace) { tr.ID = "taken" }, `trace id "taken" is empty or already taken`},
		{"results missing", func(tr *Trace) { tr.Results = tr.Results[:1] }, "trace t: 1 results for 2 rules"},
		{"results out of order", func(tr *Trace) { tr.Results = []monitor.Result{tr.Results[1], tr.Results[0]} }, "trace t: result 1 is for rule r2, want r1"},
		{"stream of another run", func(tr *Trace) { tr.Stream = clone(tr.Stream); tr.Stream[0].RunID = "x" }, `trace t: verdict 1 is about run "x", not "run"`},
		{"stream about another rule", func(tr *Trace) { tr.Stream = clone(tr.Stream); tr.Stream[0].Rule.ID = "r9" }, `trace t: verdict 1 is about rule "r9", which is not checked`},
		{"stream cut short", func(tr *Trace) { tr.Stream = nil }, "trace t: rule r1: the verdict stream ends satisfied but the monitor's final status is violated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCheck(eng.Rules(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			taken := good
			taken.ID = "taken"
			if err := c.AddTrace(taken); err != nil {
				t.Fatal(err)
			}
			before := c.Summary()
			tr := good
			tt.change(&tr)
			err = c.AddTrace(tr)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("AddTrace error = %v, want %q", err, tt.want)
			}
			after := c.Summary()
			if len(after.Traces) != 1 || after.ContentHash != before.ContentHash {
				t.Error("a refused trace was recorded")
			}
		})
	}
}

func TestNewCheckRefusesDuplicateRules(t *testing.T) {
	rules := engine(t, "r=⊤").Rules()
	if _, err := NewCheck(append(rules, rules...), "."); err == nil || err.Error() != "rule r is listed twice" {
		t.Errorf("NewCheck error = %v", err)
	}
}

// TestContentHash checks what the hash depends on.
func TestContentHash(t *testing.T) {
	base := []string{"r1=G(GitCommit → P RunTests)", "r2=F RunTests"}
	hash := func(rules []string, enforce bool, traces ...[]schema.Event) string {
		t.Helper()
		eng := engine(t, rules...)
		rs := eng.Rules()
		if enforce {
			for i := range rs {
				rs[i].Mode = schema.ModeDeny
			}
		}
		c, err := NewCheck(rs, ".")
		if err != nil {
			t.Fatal(err)
		}
		for i, evs := range traces {
			if err := c.AddTrace(monitorRun(t, eng, "t"+string(rune('0'+i)), "v", evs)); err != nil {
				t.Fatal(err)
			}
		}
		return c.Summary().ContentHash
	}
	t1 := events("a", schema.TypeRunFinish, "RunTests", "GitCommit")
	t2 := events("b", schema.TypeRunFinish, "GitCommit")
	h := hash(base, false, t1, t2)
	if again := hash(base, false, events("a", schema.TypeRunFinish, "RunTests", "GitCommit"), t2); again != h {
		t.Error("hash changed with nothing changed")
	}
	changed := map[string]string{
		"trace changed":       hash(base, false, t1, events("b", schema.TypeRunFinish, "GitCommit", "RunTests")),
		"trace outcome":       hash(base, false, t1, events("b", schema.TypeRunCancel, "GitCommit")),
		"trace added":         hash(base, false, t1, t2, t2),
		"traces reordered":    hash(base, false, t2, t1),
		"rule added":          hash(append(base, "r3=⊤"), false, t1, t2),
		"rule removed":        hash(base[:1], false, t1, t2),
		"rule formula":        hash([]string{"r1=G(GitCommit → P RunTests)", "r2=F GitCommit"}, false, t1, t2),
		"mode enforced":       hash(base, true, t1, t2),
		"same text other ids": hash([]string{"r1=G(GitCommit → P RunTests)", "r3=F RunTests"}, false, t1, t2),
	}
	for what, other := range changed {
		if other == h {
			t.Errorf("%s: hash did not change", what)
		}
	}
}

func TestOutcome(t *testing.T) {
	for end, want := range map[schema.EventType]schema.Outcome{
		schema.TypeRunFinish: schema.OutcomeCompleted,
		schema.TypeRunError:  schema.OutcomeErrored,
		schema.TypeRunCancel: schema.OutcomeCanceled,
		"":                   schema.OutcomeCanceled,
	} {
		if got := schema.RunOutcome(events("r", end, "A")); got != want {
			t.Errorf("Outcome(…%s) = %s, want %s", end, got, want)
		}
	}
}

func TestWriteFileLeavesNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.verdicts.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := []schema.VerdictEvent{{RunID: "r", Status: "violated", Cause: &schema.Cause{Event: schema.Event{Telemetry: json.RawMessage("{bad")}}}}
	if err := WriteVerdicts(path, bad); err == nil {
		t.Fatal("WriteVerdicts wrote an unencodable verdict")
	}
	data, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "old\n" || len(entries) != 1 {
		t.Errorf("after a failed write: %q, %d files", data, len(entries))
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalCounts(a, b schema.Counts) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func clone(s []schema.VerdictEvent) []schema.VerdictEvent {
	return append([]schema.VerdictEvent(nil), s...)
}
