package codex

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const fixture = "../../examples/imports/codex.jsonl"

func importFixture(t *testing.T) ([]schema.Event, map[string]int) {
	t.Helper()
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, skipped, err := Import(f, "codex.jsonl", mapping.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return evs, skipped
}

// The fixture rollout: a search and a read through the shell, an
// apply_patch updating one file and adding another, a failing test run, a
// local shell call, a commit without a passing test run, a passing run
// and a second commit, between lines of other types.
func TestGoldenEvents(t *testing.T) {
	evs, skipped := importFixture(t)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			t.Fatalf("seq %d: %v", evs[i].Seq, err)
		}
		enc.Encode(&evs[i])
	}
	golden := "testdata/codex.events.jsonl"
	if *update {
		os.WriteFile(golden, buf.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("events differ from %s (run with -update to accept):\n%s", golden, buf.Bytes())
	}
	wantSkipped := map[string]int{"event_msg": 2, "ghost_snapshot": 1, "response_item message": 3, "response_item reasoning": 1, "turn_context": 1}
	if len(skipped) != len(wantSkipped) {
		t.Errorf("skipped %v, want %v", skipped, wantSkipped)
	}
	for k, n := range wantSkipped {
		if skipped[k] != n {
			t.Errorf("skipped %s: %d, want %d", k, skipped[k], n)
		}
	}
}

func TestExampleRulesVerdicts(t *testing.T) {
	set, probs := ruleset.Load("../../examples/rules")
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	eng, _ := monitor.NewEngine(set)
	evs, _ := importFixture(t)
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
	if len(violated) != 1 || violated["tests_before_commit"] != 9 {
		t.Errorf("violated %v, want tests_before_commit at seq 9 alone", violated)
	}
}

func TestOutcome(t *testing.T) {
	cases := []struct {
		raw    string
		failed bool
		text   string
	}{
		{`"{\"output\":\"ok\",\"metadata\":{\"exit_code\":0}}"`, false, "ok"},
		{`"{\"output\":\"boom\",\"metadata\":{\"exit_code\":2}}"`, true, "boom"},
		{`"Exit code: 1\nWall time: 0.2 seconds\nOutput:\nFAIL"`, true, "Exit code: 1\nWall time: 0.2 seconds\nOutput:\nFAIL"},
		{`"Exit code: 0\nOutput:\nok"`, false, "Exit code: 0\nOutput:\nok"},
		{`{"content":"nope","success":false}`, true, "nope"},
		{`"plain text"`, false, "plain text"},
	}
	for _, c := range cases {
		failed, text := outcome(json.RawMessage(c.raw))
		if failed != c.failed || text != c.text {
			t.Errorf("%s: failed %v text %q, want %v %q", c.raw, failed, text, c.failed, c.text)
		}
	}
}

func TestPatchFiles(t *testing.T) {
	files, added := PatchFiles("*** Begin Patch\n*** Update File: a.go\n@@\n-x\n+y\n*** Add File: b/c.go\n+z\n*** Delete File: d.go\n*** End Patch")
	if strings.Join(files, " ") != "a.go b/c.go d.go" || strings.Join(added, " ") != "b/c.go" {
		t.Errorf("files %v added %v", files, added)
	}
}

func TestBadRollouts(t *testing.T) {
	cases := []struct{ in, want string }{
		{"{\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n{oops}\n", "r.jsonl:2:2: expected a JSON object (a rollout line)"},
		{"{\"type\":\"response_item\",\"payload\":{}}\n", "r.jsonl: no session_meta line: not a Codex rollout"},
	}
	for _, c := range cases {
		_, _, err := Import(strings.NewReader(c.in), "r.jsonl", mapping.Default(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzLine: no rollout line crashes the importer, and every event it makes
// is a valid envelope.
func FuzzLine(f *testing.F) {
	data, _ := os.ReadFile(fixture)
	for _, l := range bytes.Split(data, []byte("\n")) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		im := NewImporter(mapping.Default(), "f.jsonl")
		im.Line(1, []byte(`{"type":"session_meta","payload":{"id":"s","cwd":"/r"}}`))
		for i := 2; i <= 3; i++ {
			evs, err := im.Line(i, line)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "f.jsonl:") {
					t.Fatalf("error without place: %v", err)
				}
				return
			}
			evs = append(evs, im.Flush()...)
			for j := range evs {
				if err := evs[j].Validate(); err != nil {
					t.Fatalf("invalid event from %q: %v", line, err)
				}
			}
		}
	})
}
