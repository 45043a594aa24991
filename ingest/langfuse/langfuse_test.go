package langfuse

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

const fixture = "../../examples/imports/langfuse.json"

func importFixture(t *testing.T) ([]schema.Event, map[string]int) {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := Decode(data, "langfuse.json")
	if err != nil {
		t.Fatal(err)
	}
	evs, skipped := Import(traces, mapping.Default(), nil)
	return evs, skipped
}

// The fixture trace: an agent that plans, reads a file, edits it, edits a
// file it never read, runs the tests (level ERROR), and commits anyway.
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
	golden := "testdata/langfuse.events.jsonl"
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
	if skipped["AGENT"] != 1 || skipped["SPAN"] != 1 || skipped["EVENT"] != 1 || len(skipped) != 3 {
		t.Errorf("skipped %v", skipped)
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
	if len(violated) != 2 || violated["tests_before_commit"] != 8 || violated["research_before_edit"] != 5 {
		t.Errorf("violated %v, want tests_before_commit at 8 and research_before_edit at 5", violated)
	}
}

func TestDecodeForms(t *testing.T) {
	one := `{"id":"t1","observations":[{"id":"o1","type":"TOOL","name":"Read","startTime":"2026-01-01T00:00:00Z","endTime":"2026-01-01T00:00:01Z","input":{"file_path":"a"}}]}`
	for _, in := range []string{one, "[" + one + "," + strings.Replace(one, "t1", "t2", 1) + "]", `{"data":[` + one + `],"meta":{"page":1}}`} {
		traces, err := Decode([]byte(in), "x.json")
		if err != nil || len(traces) == 0 || traces[0].ID != "t1" || len(traces[0].Observations) != 1 {
			t.Errorf("%s: %v %+v", in, err, traces)
		}
	}
	bad := []struct{ in, want string }{
		{`nope`, "x.json: expected a Langfuse trace export"},
		{`[{"name":"x"}]`, "x.json: trace 0: id: expected the trace's id"},
		{`[1]`, "x.json: expected a JSON array of Langfuse traces"},
	}
	for _, b := range bad {
		if _, err := Decode([]byte(b.in), "x.json"); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v, want %q", b.in, err, b.want)
		}
	}
}

// FuzzDecode: no export crashes the decoder or the import, and every
// event is a valid envelope.
func FuzzDecode(f *testing.F) {
	data, _ := os.ReadFile(fixture)
	f.Add(data)
	f.Add([]byte(`{"data":[{"id":"t","observations":[{"type":"TOOL","name":"shell","input":"{\"command\":\"go test\"}","level":"ERROR"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		traces, err := Decode(data, "f.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json: ") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		evs, _ := Import(traces, mapping.Default(), nil)
		for i := range evs {
			if err := evs[i].Validate(); err != nil {
				t.Fatalf("invalid event: %v", err)
			}
		}
	})
}
