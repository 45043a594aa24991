package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The seed corpora of FuzzEncodeFast and FuzzEncodeVerdict under
// testdata/fuzz are events of this package's fixtures and events written
// to catch the encoders' differences: <, > and & in strings and raw
// members, line separators, invalid UTF-8 in raw members, raw members
// with spaces, extra members out of order and escaped keys.

// FuzzEncodeFast checks AppendEventLine against EncodeEventLine on every
// event the JSONL and reference decoders accept: the same bytes, or both
// an error.
func FuzzEncodeFast(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var events []Event
		if ev, err := DecodeEvent("f.jsonl", data); err == nil {
			events = append(events, ev)
		}
		if evs, err := DecodeReference("f.json", data); err == nil {
			events = append(events, evs...)
		}
		for i := range events {
			checkEncodeFast(t, &events[i])
		}
	})
}

// checkEncodeFast fails unless AppendEventLine gives EncodeEventLine's
// bytes, after a prefix it keeps, or both fail.
func checkEncodeFast(t *testing.T, ev *Event) {
	t.Helper()
	want, werr := EncodeEventLine(ev)
	got, gerr := AppendEventLine([]byte("prefix"), ev)
	switch {
	case (werr == nil) != (gerr == nil):
		t.Fatalf("encoding/json error %v, AppendEventLine error %v, on %#v", werr, gerr, ev)
	case werr == nil && !bytes.Equal(got, append([]byte("prefix"), want...)):
		t.Fatalf("encoders disagree:\nencoding/json %s\nfast          %s", want, got[len("prefix"):])
	}
	if w, ok := appendEventWritten([]byte("prefix"), ev); ok && (werr != nil || !bytes.Equal(w, append([]byte("prefix"), want...))) {
		t.Fatalf("eventWriter disagrees with encoding/json (error %v):\nencoding/json %s\nwriter        %s", werr, want, w[len("prefix"):])
	}
}

// TestEventWriter checks eventWriter against encoding/json on events with
// every member set to a value it writes itself, so that each member's key,
// place and omission is compared, and that it leaves to the general
// encoder each thing it does not write.
func TestEventWriter(t *testing.T) {
	p := int64(7)
	art := func(id string) Artifact {
		return Artifact{ID: id, Type: "SourceCode", Name: "n", DerivedFrom: []string{"a", "b"}, ProducerActionID: &p,
			Supersedes: []string{"c"}, Payload: json.RawMessage(`{ "k" : [1, "a b\\\" c"] }`), Ref: "r", CreatedAt: "t",
			Extra: map[string]json.RawMessage{"y": json.RawMessage(`2`), "x": nil}}
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", -90*60))
	full := []Event{
		{V: 1, RunID: "r", Seq: 1, TS: ts, Type: TypeRunStart, Start: &RunStart{TraceID: "t", Trigger: json.RawMessage("{\n\t\"type\": \"U\"\r}"),
			HighStakesPaths: []string{"p", "q"}, Agent: "a", Extra: map[string]json.RawMessage{"project": json.RawMessage(`"p"`), "b": json.RawMessage(`null`)}}},
		{V: 1, RunID: "r", Seq: 2, TS: ts.UTC(), Type: TypeAction, Action: &Action{ID: 3, Type: "T", Category: "c", Label: "l", Rationale: "r",
			Detail: "d", ResultSummary: "s", Status: "completed", Inputs: []string{"i"}, Outputs: []string{"o", "o2"},
			Evidence: []Evidence{{Type: "FileRef", Ref: "a.py"}, {Type: "X", Extra: map[string]json.RawMessage{"k": json.RawMessage(`true`)}}},
			Request:  json.RawMessage(`[ ]`), Timestamp: "ts", Capability: "cap", ToolName: "tn", ConnectorID: "ci", ActionType: "at",
			ActionClass: "ac", Reversibility: "rv", Risk: "high", WorkerID: "w", Specialist: "sp", TaskID: "tk",
			Payload: json.RawMessage(`{"a":1}`), Constraints: json.RawMessage(`"c"`), Requester: json.RawMessage(`{"id":"u"}`),
			Artifacts: []Artifact{art("a1"), {ID: "a2", Type: "T"}}, Extra: map[string]json.RawMessage{"zz": json.RawMessage(`1.5e3`)}}},
		{V: 1, RunID: "r", Seq: 3, TS: ts, Type: TypeAction, Action: &Action{ID: 4, Type: "T"}},
		{V: 1, RunID: "r", Seq: 4, TS: ts, Type: TypeArtifact, Artifact: &Artifact{ID: "a3", Type: "T", Name: "n"}},
		{V: 1, RunID: "r", Seq: 5, TS: ts, Type: TypeResidual, Residual: func() *Artifact { a := art("res"); return &a }()},
		{V: 1, RunID: "r", Seq: 6, TS: ts, Type: TypeTelemetry, Telemetry: json.RawMessage(` {"tokens": 12} `)},
		{V: 1, RunID: "r", Seq: 7, TS: ts, Type: TypeRunFinish, End: &RunEnd{Outcome: json.RawMessage(`{"type": "ProcessCompleted"}`), Message: "m", Implied: true}},
		{V: 1, RunID: "r", Seq: 8, TS: ts, Type: TypeRunError, End: &RunEnd{}},
		{V: 1, RunID: "r", Seq: 9, TS: ts, Type: TypeRunStart, Start: &RunStart{}},
	}
	for i := range full {
		want, err := EncodeEventLine(&full[i])
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendEventWritten(nil, &full[i])
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("event %d: writer ok %v\nencoding/json %s\nwriter        %s", i, ok, want, got)
		}
	}
	left := []func(ev *Event){
		func(ev *Event) { ev.RunID = "r<" },
		func(ev *Event) { ev.Action.Detail = "a\nb" },
		func(ev *Event) { ev.Action.Inputs = []string{"\u2028"} },
		func(ev *Event) { ev.Action.Payload = json.RawMessage(`{"a":"<"}`) },
		func(ev *Event) { ev.Action.Payload = json.RawMessage("\"\u2029\"") },
		func(ev *Event) { ev.Action.Payload = json.RawMessage(`"\u2029"`); ev.Action.Type = "\u2029" },
		func(ev *Event) { ev.Action.Extra = map[string]json.RawMessage{"k": {}} },
		func(ev *Event) { ev.Action.Extra = map[string]json.RawMessage{"k\"": json.RawMessage(`1`)} },
		func(ev *Event) { ev.Action.Evidence = []Evidence{{Type: "a&b"}} },
		func(ev *Event) { ev.TS = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		func(ev *Event) { ev.TS = time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 30)) },
	}
	for i, change := range left {
		ev := full[2]
		a := *ev.Action
		ev.Action = &a
		change(&ev)
		if got, ok := appendEventWritten([]byte("x"), &ev); ok {
			t.Errorf("change %d: written as %s, want it left to the general encoder", i, got)
		}
		checkEncodeFast(t, &ev)
	}
}

// FuzzEncodeVerdict checks AppendVerdictLine against MarshalJSON on
// verdicts of arbitrary strings whose cause is an event the decoder
// accepts (or a plain one, or none), with the cause's line and without.
func FuzzEncodeVerdict(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, runID, ruleID, desc, sub, status string, seq uint64, cause bool) {
		v := VerdictEvent{RunID: runID, Seq: seq, Rule: RuleRef{ID: ruleID, Description: desc},
			Status: VerdictStatus(status), Mode: Mode(desc + status)}
		if len(sub)%2 == 1 {
			v.Leaning = Leaning(sub)
		}
		ev, err := DecodeEvent("f.jsonl", data)
		if err != nil {
			ev = Event{V: 1, RunID: runID, Seq: seq, TS: time.Unix(int64(seq%(1<<40)), 0).UTC(), Type: TypeAction, Action: &Action{Type: sub}}
		}
		if cause {
			v.Cause = &Cause{Event: ev, Subformula: sub}
		}
		want, werr := json.Marshal(&v)
		line, lerr := AppendEventLine(nil, &ev)
		for _, cl := range [][]byte{nil, line} {
			if lerr != nil && cl != nil {
				continue
			}
			got, gerr := AppendVerdictLine([]byte("prefix"), &v, cl)
			switch {
			case (werr == nil) != (gerr == nil):
				t.Fatalf("MarshalJSON error %v, AppendVerdictLine error %v", werr, gerr)
			case werr == nil && string(got) != "prefix"+string(want)+"\n":
				t.Fatalf("encoders disagree:\nMarshalJSON %s\nfast        %s", want, got[len("prefix"):])
			}
		}
	})
}

// TestAppendEventLineLimits: what encoding/json refuses to encode, a year
// past 9999 or before 0, AppendEventLine refuses too; the corner years
// and an event with every body field encode alike.
func TestAppendEventLineLimits(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("", -23*3600)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 1, time.FixedZone("x", 5*3600+30*60)),
	} {
		ev := Event{V: 1, RunID: "r<&>", Seq: 1, TS: ts, Type: TypeAction,
			Action: &Action{ID: 1, Type: "W\u2028", Request: json.RawMessage(` {"a" : "<b>" } `),
				Extra: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`"\u2029"`), "Ä": json.RawMessage(`[ ]`)}}}
		checkEncodeFast(t, &ev)
	}
	v := VerdictEvent{RunID: "r", Rule: RuleRef{ID: "x"}, Status: StatusViolated,
		Cause: &Cause{Event: Event{TS: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	if _, err := AppendVerdictLine(nil, &v, nil); err == nil || !strings.Contains(err.Error(), "year outside of range") {
		t.Errorf("a cause of year 10000: error %v, want encoding/json's", err)
	}
	// A raw member with data after its value: the cause line cannot come
	// from AppendEventLine (not a decoded event), and without one the
	// verdict is encoding/json's, which refuses it.
	v.Cause.Event = Event{TS: time.Unix(0, 0).UTC(), Telemetry: json.RawMessage(`{} x`)}
	if _, err := AppendVerdictLine(nil, &v, nil); err == nil {
		t.Error("a raw member with trailing data encoded")
	}
}
