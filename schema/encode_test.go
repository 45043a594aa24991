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
