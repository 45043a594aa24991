package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestDecodeReferenceGolden(t *testing.T) {
	for name, data := range referenceFixtures(t) {
		t.Run(name, func(t *testing.T) {
			events, err := DecodeReference(name, data)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "testdata/reference/"+strings.TrimSuffix(name, ".json")+".events.jsonl", encodeJSONL(t, events))
		})
	}
}

// shape renders a stream compactly: types, with action and artifact ids.
func shape(events []Event) string {
	var parts []string
	for _, e := range events {
		switch {
		case e.Action != nil:
			parts = append(parts, fmt.Sprintf("action:%d", e.Action.ID))
		case e.Artifact != nil:
			parts = append(parts, "artifact:"+e.Artifact.ID)
		case e.Residual != nil:
			parts = append(parts, "residual:"+e.Residual.ID)
		default:
			parts = append(parts, string(e.Type))
		}
	}
	return strings.Join(parts, " ")
}

func TestDecodeReferenceOrder(t *testing.T) {
	fixtures := referenceFixtures(t)
	for name, want := range map[string]string{
		// Artifacts follow their producer; ids are normalised to strings.
		"verify_proved.json": "run.start action:1 artifact:src-invoice action:2 artifact:src-invoice-2 action:3 artifact:301 " +
			"action:4 artifact:vg-1 action:5 artifact:vr-1 action:6 artifact:tr-1 action:7 " +
			"residual:res-1 residual:residual-2 telemetry telemetry run.finish",
		// Actions in id order; an unconsumed orphan first; a consumed orphan
		// (no producer, or producer 17 not in the trace) before its consumer.
		"deploy_aborted.json": "run.start artifact:note-1 action:1 artifact:build-cfg action:2 artifact:tr-1 " +
			"action:3 artifact:approval-1 action:4 artifact:cmd-1 run.error",
		"decompose_interrupted.json": "run.start action:10 artifact:1 action:11 artifact:2 action:12 artifact:3 " +
			"action:13 artifact:4 action:14 run.cancel",
		// No outcome: a finished record ends as completed.
		"minimal.json": "run.start action:1 run.finish",
	} {
		events, err := DecodeReference(name, fixtures[name])
		if err != nil {
			t.Fatal(err)
		}
		if got := shape(events); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		for i, e := range events {
			if e.Seq != uint64(i+1) || e.RunID != events[0].Start.TraceID {
				t.Errorf("%s: event %d has runId %q, seq %d", name, i, e.RunID, e.Seq)
			}
		}
	}
}

// An event without a time of its own takes the previous event's; those
// before the first time take it; run.start and the closing event take
// their neighbours'.
func TestDecodeReferenceStampsEvents(t *testing.T) {
	trace := `{"trace_id": "t", "actions": [
		{"id": 1, "type": "A"},
		{"id": 2, "type": "A", "timestamp": "2026-01-01T00:00:01Z"},
		{"id": 3, "type": "A", "timestamp": "not a time"},
		{"id": 4, "type": "A", "timestamp": "2026-01-01T00:00:04Z"},
		{"id": 5, "type": "A"}],
	"artifacts": [{"artifact_id": "x", "artifact_type": "T", "producer_action_id": 5, "created_at": "2026-01-01T00:00:06Z"}]}`
	events, err := DecodeReference("t.json", []byte(trace))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.TS.Format("05"))
	}
	// run.start, actions 1–5, artifact x, run.finish
	if want := "01 01 01 01 04 04 06 06"; strings.Join(got, " ") != want {
		t.Errorf("seconds of each event's ts: %s, want %s", strings.Join(got, " "), want)
	}
}

func TestDecodeReferenceNormalises(t *testing.T) {
	fixtures := referenceFixtures(t)
	decode := func(name string) []Event {
		events, err := DecodeReference(name, fixtures[name])
		if err != nil {
			t.Fatal(err)
		}
		return events
	}
	action := func(events []Event, id int64) *Action {
		for _, e := range events {
			if e.Action != nil && e.Action.ID == id {
				return e.Action
			}
		}
		t.Fatalf("no action %d", id)
		return nil
	}
	proved := decode("verify_proved.json")
	if got := action(proved, 1).Outputs; !slices.Equal(got, []string{"src-invoice"}) {
		t.Errorf("outputs of action 1 = %q: want the produced artifact added", got)
	}
	if got := action(proved, 3).Outputs; !slices.Equal(got, []string{"301"}) {
		t.Errorf("outputs of action 3 = %q: want 301 once, as a string", got)
	}
	if got := proved[4].Artifact.Supersedes; !slices.Equal(got, []string{"src-invoice"}) {
		t.Errorf("supersedes = %q: want a list", got)
	}
	if got := string(proved[0].Start.Extra["spec_version"]); got != `"1.13"` {
		t.Errorf("run.start keeps spec_version as %s", got)
	}

	aborted := decode("deploy_aborted.json")
	if a := action(aborted, 4); a.Status != ActionFailed || string(a.Extra["blocked"]) != "true" || a.Capability != "deploy.production" {
		t.Errorf("action 4 = %+v", a)
	}
	if got := aborted[1].Artifact.ID; aborted[0].TS != aborted[1].TS || got != "note-1" {
		t.Errorf("events before the first timestamp take it: %v, %v", aborted[0].TS, aborted[1].TS)
	}
	if got := *aborted[9].Artifact.ProducerActionID; got != 4 {
		t.Errorf("producer_action_id \"4\" = %d", got)
	}

	interrupted := decode("decompose_interrupted.json")
	a14 := action(interrupted, 14)
	if string(a14.Extra["evidence"]) != "[]" || string(a14.Extra["inputs"]) != "[]" || a14.Status != "" {
		t.Errorf("action 14 = %+v: want its empty lists kept in Extra", a14)
	}
	if interrupted[9].TS != interrupted[8].TS {
		t.Errorf("an unparsable timestamp takes the previous ts")
	}
	if got := action(interrupted, 13).Status; got != ActionCompleted {
		t.Errorf(`status of "OK" = %q`, got)
	}

	if got := decode("minimal.json")[1].TS.Unix(); got != 0 {
		t.Errorf("no timestamps: ts = %d, want the epoch", got)
	}
}

func TestDeriveStatus(t *testing.T) {
	for summary, want := range map[string]string{
		"212 passed, 3 failed":    ActionFailed,
		"Error: blocked":          ActionFailed,
		"0 errors":                "",
		"14 passed, 0 failed":     ActionCompleted,
		"no failures, 3 errors":   ActionFailed,
		"14 passed in 2.1s":       ActionCompleted,
		"Model completed":         ActionCompleted,
		"Successfully deployed":   ActionCompleted,
		"OK":                      ActionCompleted,
		"ok.":                     ActionCompleted,
		"token refreshed":         "",
		"Proved":                  "",
		"":                        "",
		"interrupted by the user": "",
	} {
		if got := DeriveStatus(summary); got != want {
			t.Errorf("DeriveStatus(%q) = %q, want %q", summary, got, want)
		}
	}
}

func TestReferenceRoundTrip(t *testing.T) {
	for name, data := range referenceFixtures(t) {
		t.Run(name, func(t *testing.T) {
			events, err := DecodeReference(name, data)
			if err != nil {
				t.Fatal(err)
			}
			encoded, err := EncodeReference(events)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeReference("encoded.json", encoded)
			if err != nil {
				t.Fatalf("%v\n%s", err, encoded)
			}
			if a, b := encodeJSONL(t, events), encodeJSONL(t, again); !bytes.Equal(a, b) {
				t.Errorf("decode(encode(events)) differs:\n%s\nwant\n%s", b, a)
			}
			if a, b := normaliseTrace(t, data), normaliseTrace(t, encoded); a != b {
				t.Errorf("encode(decode(file)) differs from the file beyond the normalisations:\n%s\nwant\n%s", b, a)
			}
		})
	}
}

// normaliseTrace applies the documented normalisations of the conversion to
// a reference trace, independently of the decoder: ids become strings,
// single ids lists, producer_action_id an integer, outputs gain the
// artifacts their action produced (without duplicates), a missing status is
// derived; actions are sorted by id and artifacts by content, since the
// conversion reorders them.
func normaliseTrace(t *testing.T, data []byte) string {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	id := func(v any) any {
		if n, ok := v.(json.Number); ok {
			return string(n)
		}
		return v
	}
	ids := func(v any) any {
		list, ok := v.([]any)
		if !ok {
			return []any{id(v)}
		}
		for i := range list {
			list[i] = id(list[i])
		}
		return list
	}
	produced := map[string][]any{}
	artifacts := doc["artifacts"].([]any)
	for _, a := range artifacts {
		m := a.(map[string]any)
		m["artifact_id"] = id(m["artifact_id"])
		for _, k := range []string{"derived_from", "supersedes"} {
			if v := m[k]; v != nil {
				m[k] = ids(v)
			}
		}
		if p, ok := m["producer_action_id"].(string); ok {
			m["producer_action_id"] = json.Number(p)
		}
		if p := m["producer_action_id"]; p != nil {
			key := string(p.(json.Number))
			produced[key] = append(produced[key], m["artifact_id"])
		}
	}
	actions := doc["actions"].([]any)
	for _, a := range actions {
		m := a.(map[string]any)
		for _, k := range []string{"inputs", "outputs"} {
			if v := m[k]; v != nil {
				m[k] = ids(v)
			}
		}
		var outputs []any
		if list, ok := m["outputs"].([]any); ok {
			outputs = list
		}
		var union []any
		for _, o := range append(outputs, produced[string(m["id"].(json.Number))]...) {
			if !slices.Contains(union, o) {
				union = append(union, o)
			}
		}
		if len(union) > 0 {
			m["outputs"] = union
		}
		if s, _ := m["status"].(string); s == "" {
			summary, _ := m["result_summary"].(string)
			if derived := DeriveStatus(summary); derived != "" {
				m["status"] = derived
			}
		}
	}
	slices.SortStableFunc(actions, func(a, b any) int {
		x, _ := a.(map[string]any)["id"].(json.Number).Int64()
		y, _ := b.(map[string]any)["id"].(json.Number).Int64()
		return int(x - y)
	})
	canonical := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	slices.SortFunc(artifacts, func(a, b any) int { return strings.Compare(canonical(a), canonical(b)) })
	return canonical(doc)
}

func TestDecodeReferenceErrors(t *testing.T) {
	// Each document is valid apart from what the case names.
	for _, tc := range []struct {
		name, doc, want string
		sentinel        error
	}{
		{"syntax", "{\n  \"trace_id\": \"t\",\n  \"actions\": [,]\n}", `trace.json:3:15: malformed JSON: invalid character ',' looking for beginning of value`, ErrMalformedJSON},
		{"not an object", `[1, 2]`, `trace.json:1:1: wrong type: expected an object, got an array`, ErrWrongType},
		{"required members", `{"agent": "a"}`, "trace.json:1:1: trace_id: missing field: expected a non-empty string\n" +
			"trace.json:1:1: actions: missing field: expected an array", ErrMissingField},
		{"id not an integer", "{\"trace_id\": \"t\", \"artifacts\": [],\n \"actions\": [{\"id\": 1, \"type\": \"A\"}, {\"id\": \"x\", \"type\": \"B\"}]}",
			`trace.json:2:45: actions[1].id: wrong type: expected an integer, got "x"`, ErrWrongType},
		{"fractional id", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1.5, "type": "A"}]}`,
			`trace.json:1:55: actions[0].id: wrong type: expected an integer, got 1.5`, ErrWrongType},
		{"missing id", `{"trace_id": "t", "artifacts": [], "actions": [{"type": "A"}]}`,
			`trace.json:1:48: actions[0].id: missing field: expected an integer`, ErrMissingField},
		{"duplicate id", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1, "type": "A"}, {"id": 1, "type": "B"}]}`,
			`trace.json:1:79: actions[1].id: invalid value: expected a unique id, got 1, the id of actions[0]`, ErrInvalidValue},
		{"missing action type", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1}]}`,
			`trace.json:1:48: actions[0].type: missing field: expected a non-empty string`, ErrMissingField},
		{"bad status", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1, "type": "A", "status": "ok"}]}`,
			`trace.json:1:81: actions[0].status: invalid value: expected "", "completed" or "failed", got "ok"`, ErrInvalidValue},
		{"artifact id", `{"trace_id": "t", "actions": [], "artifacts": [{"artifact_type": "SourceCode"}]}`,
			`trace.json:1:48: artifacts[0].artifact_id: missing field: expected a non-empty string`, ErrMissingField},
		{"trace_id too long", `{"trace_id": "` + strings.Repeat("t", 300) + `", "actions": [], "artifacts": []}`,
			`trace.json:1:14: trace_id: too large: expected at most 256 bytes, got 300 bytes`, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, err := DecodeReference("trace.json", []byte(tc.doc))
			if events != nil || err == nil || err.Error() != tc.want {
				t.Fatalf("DecodeReference() = %d events, %v\nwant %s", len(events), err, tc.want)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error does not wrap %v", tc.sentinel)
			}
		})
	}
}

func TestEncodeReferenceFromStream(t *testing.T) {
	data, err := os.ReadFile("testdata/stream.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	events, err := DecodeJSONL("stream.jsonl", bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	runA := SplitRuns(events)[0].Events
	encoded, err := EncodeReference(runA)
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeReference("run-a.json", encoded)
	if err != nil {
		t.Fatalf("%v\n%s", err, encoded)
	}
	// The inline artifact joins the artifacts list, produced by its action.
	want := "run.start action:1 action:2 artifact:cmd-9 artifact:obs-1 action:3 residual:res-9 telemetry run.error"
	if got := shape(again); got != want {
		t.Errorf("got  %s\nwant %s\n%s", got, want, encoded)
	}
	var outcome bytes.Buffer
	if err := json.Compact(&outcome, again[len(again)-1].End.Outcome); err != nil || outcome.String() != `{"message":"rollout failed","type":"ProcessAborted"}` {
		t.Errorf("outcome = %s", outcome.String())
	}
	if got := again[1].Action.Evidence[0].Ref; got != "secrets/keys.yaml" {
		t.Errorf("evidence ref = %q", got)
	}
}

func TestEncodeReferenceErrors(t *testing.T) {
	ts := mustTime(t, "2025-01-01T00:00:00Z")
	start := func(run string) Event { return Event{V: 1, RunID: run, Seq: 1, TS: ts, Type: TypeRunStart} }
	for _, tc := range []struct {
		events []Event
		want   string
	}{
		{nil, "missing field: expected at least one event"},
		{[]Event{start("a"), start("b")}, `events[1]: runId: more than one run: expected "a", got "b"`},
		{[]Event{start("a"), {V: 1, RunID: "a", Seq: 2, TS: ts, Type: TypeAction}}, `events[1]: action: missing field: expected a body for type "action"`},
	} {
		if _, err := EncodeReference(tc.events); err == nil || err.Error() != tc.want {
			t.Errorf("EncodeReference() = %v, want %s", err, tc.want)
		}
	}
}

// TestDecodeReferenceWarnings: a value in a form the format does not define
// does not make a real trace unreadable. It is read as well as it can be, or
// left out, with a warning naming it and saying how it was read; the trace
// converts all the same, and what was left out stays in Extra.
func TestDecodeReferenceWarnings(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
		check           func(t *testing.T, events []Event)
	}{
		{"label not a string", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1, "type": "A", "label": 7}]}`,
			`trace.json:1:80: actions[0].label: wrong type: expected a string, got 7; read as "7"`,
			func(t *testing.T, ev []Event) {
				if ev[1].Action.Label != "7" {
					t.Errorf("label %q", ev[1].Action.Label)
				}
			}},
		{"rationale an object", `{"trace_id": "t", "actions": [{"id": 1, "type": "A", "rationale": {"why": "x"}}]}`,
			`trace.json:1:67: actions[0].rationale: wrong type: expected a string, got an object; left out`,
			func(t *testing.T, ev []Event) {
				if ev[1].Action.Rationale != "" || string(ev[1].Action.Extra["rationale"]) != `{"why": "x"}` {
					t.Errorf("rationale %q, extra %s", ev[1].Action.Rationale, ev[1].Action.Extra["rationale"])
				}
			}},
		{"input an object", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1, "type": "A", "inputs": ["a", {"id": "b"}, [1]]}]}`,
			"trace.json:1:87: actions[0].inputs[1]: wrong type: expected a string or a number, got an object; read as its id \"b\"\n" +
				`trace.json:1:100: actions[0].inputs[2]: wrong type: expected a string or a number, got an array; left out`,
			func(t *testing.T, ev []Event) {
				if got := strings.Join(ev[1].Action.Inputs, ","); got != "a,b" {
					t.Errorf("inputs %s", got)
				}
			}},
		{"evidence entry", `{"trace_id": "t", "artifacts": [], "actions": [{"id": 1, "type": "A", "evidence": ["a.go", {"type": "FileRef", "ref": "b.go"}]}]}`,
			`trace.json:1:84: actions[0].evidence[0]: wrong type: expected an object, got "a.go"; left out`,
			func(t *testing.T, ev []Event) {
				if len(ev[1].Action.Evidence) != 1 || ev[1].Action.Evidence[0].Ref != "b.go" {
					t.Errorf("evidence %+v", ev[1].Action.Evidence)
				}
			}},
		{"producer", `{"trace_id": "t", "actions": [], "artifacts": [{"artifact_id": "a", "artifact_type": "T", "producer_action_id": "abc"}]}`,
			`trace.json:1:113: artifacts[0].producer_action_id: wrong type: expected an integer, got "abc"; read as no producer`, nil},
		{"high stakes path a string", `{"trace_id": "t", "high_stakes_paths": "deploy/", "actions": [], "artifacts": []}`,
			`trace.json:1:40: high_stakes_paths: wrong type: expected an array of strings, got "deploy/"; read as a list of one`,
			func(t *testing.T, ev []Event) {
				if len(ev[0].Start.HighStakesPaths) != 1 || ev[0].Start.HighStakesPaths[0] != "deploy/" {
					t.Errorf("high_stakes_paths %v", ev[0].Start.HighStakesPaths)
				}
			}},
		{"residual entry", `{"trace_id": "t", "actions": [], "artifacts": [], "residuals": ["overflow"]}`,
			`trace.json:1:65: residuals[0]: wrong type: expected an object, got "overflow"; left out`, nil},
		{"telemetry an object", `{"trace_id": "t", "actions": [], "telemetry": {"spans": 3}}`,
			`trace.json:1:47: telemetry: wrong type: expected an array, got an object; read as none`, nil},
		{"outcome type", `{"trace_id": "t", "actions": [], "artifacts": [], "outcome": {"type": "ProcessPaused"}}`,
			`trace.json:1:71: outcome.type: invalid value: expected ProcessCompleted, ProcessAborted or ProcessInterrupted, got "ProcessPaused"; the run ends as completed`,
			lastIs(TypeRunFinish)},
		{"outcome without type", `{"trace_id": "t", "actions": [], "artifacts": [], "outcome": {"status": "done"}}`,
			`trace.json:1:62: outcome.type: missing field: expected ProcessCompleted, ProcessAborted or ProcessInterrupted; the run ends as completed`,
			lastIs(TypeRunFinish)},
		{"outcome a string", `{"trace_id": "t", "actions": [], "outcome": "ProcessAborted"}`, "", lastIs(TypeRunError)},
		{"no outcome", `{"trace_id": "t", "actions": []}`, "",
			func(t *testing.T, ev []Event) {
				if last := ev[len(ev)-1]; last.Type != TypeRunFinish || last.End == nil || !last.End.Implied {
					t.Errorf("last event %+v", last)
				}
			}},
		{"quoted action id", `{"trace_id": "t", "actions": [{"id": "2", "type": "B"}, {"id": 1, "type": "A"}]}`, "",
			func(t *testing.T, ev []Event) {
				if ev[1].Action.ID != 1 || ev[2].Action.ID != 2 {
					t.Errorf("ids %d %d", ev[1].Action.ID, ev[2].Action.ID)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, warnings, err := DecodeReferenceWarn("trace.json", []byte(tc.doc))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			got := ""
			if warnings != nil {
				got = warnings.Error()
			}
			if got != tc.want {
				t.Errorf("warnings\n got %s\nwant %s", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, events)
			}
		})
	}
}

func lastIs(typ EventType) func(*testing.T, []Event) {
	return func(t *testing.T, ev []Event) {
		if last := ev[len(ev)-1]; last.Type != typ {
			t.Errorf("last event %s, want %s", last.Type, typ)
		}
	}
}
