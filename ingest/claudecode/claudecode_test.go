package claudecode

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func importFixture(t *testing.T, explain func(int, string)) []schema.Event {
	t.Helper()
	f, err := os.Open("../../examples/imports/claude-code.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, _, err := Import(f, "session.jsonl", mapping.Default(), explain)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func encode(t *testing.T, evs []schema.Event) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			t.Fatalf("seq %d: %v", evs[i].Seq, err)
		}
		if err := enc.Encode(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// The fixture session: a search, a read, a failing read, edits, a failing
// test run, a commit without a passing test run, a passing test run and a
// second commit. Its event stream is the golden file.
func TestGoldenEvents(t *testing.T) {
	got := encode(t, importFixture(t, nil))
	golden := "testdata/session.events.jsonl"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("events differ from %s (run with -update to accept):\n%s", golden, got)
	}
}

// The example rules judge the imported run as they judge a native one:
// the commit without a passing test run violates tests_before_commit, the
// edit of a file never read violates research_before_edit, and nothing
// else is violated.
func TestExampleRulesVerdicts(t *testing.T) {
	set, probs := ruleset.Load("../../examples/rules")
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	evs := importFixture(t, nil)
	run := eng.NewRun(evs[0].RunID)
	violated := map[string]uint64{}
	for i := range evs {
		vs, err := run.Add(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.Status == schema.StatusViolated {
				violated[v.Rule.ID] = v.Seq
			}
		}
	}
	want := map[string]uint64{"tests_before_commit": 9, "research_before_edit": 6}
	if len(violated) != len(want) {
		t.Errorf("violated %v, want %v", violated, want)
	}
	for id, seq := range want {
		if violated[id] != seq {
			t.Errorf("%s violated at seq %d, want %d (all: %v)", id, violated[id], seq, violated)
		}
	}
}

func TestExplainEveryLine(t *testing.T) {
	lines := map[int][]string{}
	importFixture(t, func(n int, what string) { lines[n] = append(lines[n], what) })
	data, _ := os.ReadFile("../../examples/imports/claude-code.jsonl")
	total := bytes.Count(data, []byte("\n"))
	for n := 1; n <= total; n++ {
		if len(lines[n]) == 0 {
			t.Errorf("line %d: no explanation", n)
		}
	}
	if got := strings.Join(lines[15], "|"); !strings.Contains(got, "seq 7 action 6 RunTests (failed)") {
		t.Errorf("line 15: %s", got)
	}
	if got := strings.Join(lines[27], "|"); got != "summary: skipped: holds no tool call" {
		t.Errorf("line 27: %s", got)
	}
}

func TestPendingCallsAtTheEnd(t *testing.T) {
	in := `{"type":"assistant","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"a.go"}}]}}
{"type":"user","sessionId":"s","timestamp":"2026-01-01T00:00:05Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"package a"}]}]}}
{"type":"user","sessionId":"s","timestamp":"2026-01-01T00:00:06Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"?"}]}}
`
	evs, skipped, err := Import(strings.NewReader(in), "p.jsonl", mapping.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[1].Action.Type != "ReadFile" || evs[1].Action.ResultSummary != "package a" || evs[2].Action.Type != "RunTests" || evs[2].Action.Status != "" {
		t.Fatalf("%s", encode(t, evs))
	}
	if skipped["tool_result"] != 1 {
		t.Errorf("skipped %v", skipped)
	}
}

func TestBadTranscripts(t *testing.T) {
	cases := []struct{ in, want string }{
		{"{\"type\":\"user\",\"sessionId\":\"s\"}\n{\"type\": nope}\n", "b.jsonl:2:11: expected a JSON object (a transcript line)"},
		{"{\"type\":\"summary\",\"summary\":\"x\"}\n", "b.jsonl: no line names a session (sessionId): not a Claude Code transcript"},
		{"[1,2]\n", "b.jsonl:1:1: expected a JSON object"},
	}
	for _, c := range cases {
		_, _, err := Import(strings.NewReader(c.in), "b.jsonl", mapping.Default(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func TestLatest(t *testing.T) {
	projects := t.TempDir()
	dir := "/home/a/my.app"
	folder := filepath.Join(projects, "-home-a-my-app")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Latest(projects, "/elsewhere"); err == nil || !strings.Contains(err.Error(), "no Claude Code sessions for /elsewhere") {
		t.Errorf("%v", err)
	}
	old, newer := filepath.Join(folder, "a.jsonl"), filepath.Join(folder, "b.jsonl")
	os.WriteFile(old, nil, 0o644)
	os.WriteFile(newer, nil, 0o644)
	past := mustTime(t, "2026-01-01T00:00:00Z")
	os.Chtimes(old, past, past)
	if got, err := Latest(projects, dir); err != nil || got != newer {
		t.Errorf("latest %s %v, want %s", got, err, newer)
	}
}

// FuzzLine: no transcript line crashes the importer, and every event it
// makes is a valid envelope.
func FuzzLine(f *testing.F) {
	data, _ := os.ReadFile("../../examples/imports/claude-code.jsonl")
	for _, l := range bytes.Split(data, []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"user","sessionId":"s","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":[1]}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		im := NewImporter(mapping.Default(), "f.jsonl")
		for i := 1; i <= 2; i++ {
			evs, err := im.Line(i, line)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "f.jsonl:") {
					t.Fatalf("error without place: %v", err)
				}
				return
			}
			if im.Session() != nil {
				evs = append(evs, im.Flush()...)
			}
			for j := range evs {
				if err := evs[j].Validate(); err != nil {
					t.Fatalf("invalid event from %q: %v", line, err)
				}
			}
		}
	})
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
