package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/sink/file"
)

var engine *chdb.Engine

func chdbQ() Querier { return chdb.Querier{E: engine} }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ponens-api-test-")
	if err != nil {
		panic(err)
	}
	engine, err = chdb.Open(chdb.Options{Path: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "api tests:", err)
		os.Exit(2)
	}
	if _, err := chdb.Migrate(engine); err != nil {
		fmt.Fprintln(os.Stderr, "api tests: migrate:", err)
		os.Exit(2)
	}
	if err := seed(); err != nil {
		fmt.Fprintln(os.Stderr, "api tests: seed:", err)
		os.Exit(2)
	}
	code := m.Run()
	engine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// seed stores two runs: r1 violates rule a, r2 satisfies it.
func seed() error {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := func(run string, seq uint64, typ schema.EventType) schema.Event {
		e := schema.Event{V: 1, RunID: run, Seq: seq, TS: t0.Add(time.Duration(seq) * time.Second), Type: typ}
		if typ == schema.TypeRunStart {
			e.Start = &schema.RunStart{Agent: "coder-1", Extra: map[string]json.RawMessage{"project": json.RawMessage(`"pay"`)}}
		}
		return e
	}
	a := chdb.NewStore(engine).Appender()
	var pos uint64
	for _, run := range []string{"r1", "r2"} {
		events := []schema.Event{ev(run, 1, schema.TypeRunStart), ev(run, 2, schema.TypeRunFinish)}
		st := schema.StatusViolated
		if run == "r2" {
			st = schema.StatusSatisfied
		}
		stream := []schema.VerdictEvent{{RunID: run, Seq: 2, Rule: schema.RuleRef{ID: "a", Description: "rule a"}, Status: st, Mode: schema.ModeObserve}}
		if err := sink.AppendRun(a, events, stream, &pos); err != nil {
			return err
		}
	}
	return a.Commit()
}

func newTestServer(t *testing.T) *httptest.Server {
	s, err := New(Options{Store: chdb.Querier{E: engine}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestRunsFilters(t *testing.T) {
	ts := newTestServer(t)
	code, body := get(t, ts.URL+"/v1/runs?status=violated")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var env struct {
		Data RunPage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatal(err)
	}
	if len(env.Data.Runs) != 1 || env.Data.Runs[0].RunID != "r1" || env.Data.Runs[0].Project != "pay" || env.Data.Runs[0].Outcome != "completed" {
		t.Fatalf("violated runs: %s", body)
	}
	// Paging: one run a page, newest first by start then id, then no cursor.
	_, body = get(t, ts.URL+"/v1/runs?limit=1")
	json.Unmarshal(body, &env)
	if len(env.Data.Runs) != 1 || env.Data.Runs[0].RunID != "r2" || env.Data.NextCursor == "" {
		t.Fatalf("page 1: %s", body)
	}
	_, body = get(t, ts.URL+"/v1/runs?limit=1&cursor="+env.Data.NextCursor)
	json.Unmarshal(body, &env)
	if len(env.Data.Runs) != 1 || env.Data.Runs[0].RunID != "r1" || env.Data.NextCursor != "" {
		t.Fatalf("page 2: %s", body)
	}
}

func TestSummaryOfStoredRuns(t *testing.T) {
	ts := newTestServer(t)
	code, body := get(t, ts.URL+"/v1/summary?run=r1&run=r2")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	s, err := schema.DecodeSummary(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Traces) != 2 || s.Matrix.Cells[0][0] != schema.StatusViolated || s.Matrix.Cells[0][1] != schema.StatusSatisfied || s.Traces[0].Events != 2 {
		t.Fatalf("summary: %s", body)
	}
}

// Hostile values in every parameter of every endpoint: 400, 404 or a
// normal answer, never 500, and the tables are intact afterwards.
func TestHostileParameters(t *testing.T) {
	ts := newTestServer(t)
	hostile := []string{"'", `\`, `\'`, "'; DROP TABLE verdicts; --", "\x00", "\xff\xfe", "{p0:String}", strings.Repeat("x'\\", 3000)}
	endpoints := map[string][]string{
		"/v1/runs":          append(selectionParams, "limit", "cursor"),
		"/v1/summary":       selectionParams,
		"/v1/rules":         {"since", "until"},
		"/v1/rules/a/stats": {"since", "until", "step"},
		"/v1/fleet":         {"since", "until", "step"},
		"/v1/export":        append(selectionParams, "what", "format"),
		"/v1/deadletters":   {"since", "until", "reason", "source", "before", "limit"},
	}
	for path, params := range endpoints {
		for _, p := range params {
			for _, h := range hostile {
				u := ts.URL + path + "?" + url.Values{p: {h}}.Encode()
				if code, body := get(t, u); code >= 500 {
					t.Errorf("%s %s=%q: %d %s", path, p, h, code, body)
				}
			}
		}
	}
	for _, h := range hostile {
		for _, path := range []string{"/v1/runs/%s", "/v1/runs/%s/timeline", "/v1/runs/%s/verdicts", "/v1/rules/%s/stats"} {
			u := ts.URL + fmt.Sprintf(path, url.PathEscape(h))
			if code, body := get(t, u); code >= 500 {
				t.Errorf("%s: %d %s", u, code, body)
			}
		}
	}
	out, err := engine.Query([]byte("SELECT count() FROM verdicts"), "CSV")
	if err != nil || strings.TrimSpace(string(out)) != "2" {
		t.Fatalf("verdicts after hostile requests: %q %v", out, err)
	}
}

// monitorOf is a rule set of one rule, and its summary manifest.
func monitorOf(t *testing.T, id, formula string) (*ruleset.Set, []schema.RuleManifestEntry) {
	t.Helper()
	r, probs := ruleset.FromFormula(id, formula)
	set := &ruleset.Set{}
	if probs == nil {
		probs = set.Add(r)
	}
	if probs != nil {
		t.Fatal(probs)
	}
	eng, errs := monitor.NewEngine(set)
	if errs != nil {
		t.Fatal(errs)
	}
	return set, file.RuleManifest(eng.Rules())
}

// With a rule set to monitor, a summary's matrix.results are the rules'
// results on the stored events by finite-trace semantics; when a listed
// rule is not in the set there are none.
func TestSummaryResults(t *testing.T) {
	set, manifest := monitorOf(t, "a", "F(GitCommit)") // never true on the seeded runs, which have no action
	s, err := New(Options{Store: chdbQ(), Monitor: set, Rules: manifest})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Summary(t.Context(), SummaryOptions{Selection{Runs: []string{"r1", "r2"}}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := schema.DecodeSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sum.Matrix.Results) != "[[fail fail]]" || fmt.Sprint(sum.Matrix.Cells) != "[[violated satisfied]]" {
		t.Errorf("results %v cells %v, want [[fail fail]] from the monitor and [[violated satisfied]] from the store", sum.Matrix.Results, sum.Matrix.Cells)
	}
	other, _ := monitorOf(t, "b", "F(GitCommit)")
	s, err = New(Options{Store: chdbQ(), Monitor: other})
	if err != nil {
		t.Fatal(err)
	}
	if b, err = s.Summary(t.Context(), SummaryOptions{Selection{Runs: []string{"r1"}, Rules: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	if sum, err = schema.DecodeSummary(b); err != nil || sum.Matrix.Results != nil {
		t.Errorf("a rule the monitor does not hold: results %v (%v), want none", sum.Matrix.Results, err)
	}
}

// A run's detail lists every rule a summary of it lists: a rule of the
// manifest with no verdict on the run is satisfied, with seq 0 and no ts.
func TestRunDetailListsEveryRule(t *testing.T) {
	manifest := []schema.RuleManifestEntry{{ID: "quiet", Mode: schema.ModeDeny, Text: "G true"}}
	s, err := New(Options{Store: chdb.Querier{E: engine}, Rules: manifest})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	code, body := get(t, ts.URL+"/v1/runs/r1")
	var env struct {
		Data RunDetail `json:"data"`
	}
	if err := json.Unmarshal(body, &env); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	want := []RuleStatus{
		{RuleID: "quiet", Version: "1", Mode: schema.ModeDeny, Status: schema.StatusSatisfied},
		{RuleID: "a", Version: "1", Mode: schema.ModeObserve, Status: schema.StatusViolated, Seq: 2},
	}
	got := env.Data.Rules
	for i := range got {
		if got[i].RuleID == "a" && got[i].TS == "" {
			t.Errorf("rule a: no ts: %s", body)
		}
		got[i].TS = ""
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules %+v, want %+v", got, want)
	}
	if strings.Contains(string(body), `"ruleId":"quiet","version":"1","mode":"deny","status":"satisfied","seq":0,"ts"`) {
		t.Errorf("a rule with no verdict has a ts: %s", body)
	}
}

// A parameter that takes one value is refused when repeated; run and rule
// add up.
func TestRepeatedParameters(t *testing.T) {
	ts := newTestServer(t)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/v1/runs?agent=a&agent=b", 400, "parameter agent: given 2 times"},
		{"/v1/runs?since=1h&since=2h", 400, "given 2 times"},
		{"/v1/runs?status=violated&status=satisfied", 400, "takes one status"},
		{"/v1/fleet?step=1h&step=2h", 400, "given 2 times"},
		{"/v1/summary?run=r1&run=r2&rule=a&rule=a", 200, `"r2"`},
	} {
		code, body := get(t, ts.URL+tc.path)
		if code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s, want %d and %s", tc.path, code, body, tc.code, tc.want)
		}
	}
}
