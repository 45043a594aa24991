package schema

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestRunToken(t *testing.T) {
	for _, tc := range []struct{ runID, token string }{
		{"run-a", "run-a"},
		{"Run_42", "Run_42"},
		{"a.b", "~YS5i"},
		{"a b", "~YSBi"},
		{"~x", "~fng"},
		{"a\n", "~YQo"},
		{"*", "~Kg"},
		{">", "~Pg"},
		{"é", "~w6k"},
		{"", "~"},
		{"0", "0"},
		{"zZ09-_", "zZ09-_"},
		{"a/b", "~YS9i"},
		{"a\x00", "~YQA"},
	} {
		tok := RunToken(tc.runID)
		if tok != tc.token {
			t.Errorf("RunToken(%q) = %q, want %q", tc.runID, tok, tc.token)
		}
		back, err := ParseRunToken(tok)
		if err != nil || back != tc.runID {
			t.Errorf("ParseRunToken(%q) = %q, %v; want %q", tok, back, err, tc.runID)
		}
	}
	if _, err := ParseRunToken("a.b"); err == nil {
		t.Error("ParseRunToken accepted a token with a dot")
	}
}

// FuzzRunToken checks RunToken against a regular expression written
// apart from it (the plain form is the runId itself exactly when it matches)
// and that ParseRunToken gives every runId back.
func FuzzRunToken(f *testing.F) {
	for _, s := range []string{"run-a", "a.b", "", "~x", "é", "A_9-z"} {
		f.Add(s)
	}
	plain := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	f.Fuzz(func(t *testing.T, runID string) {
		tok := RunToken(runID)
		if want := plain.MatchString(runID); (tok == runID) != want {
			t.Fatalf("RunToken(%q) = %q; plain by the expression: %v", runID, tok, want)
		}
		if back, err := ParseRunToken(tok); err != nil || back != runID {
			t.Fatalf("ParseRunToken(%q) = %q, %v; want %q", tok, back, err, runID)
		}
		if strings.ContainsAny(tok, ".*> \t\r\n") {
			t.Fatalf("RunToken(%q) = %q is not one subject token", runID, tok)
		}
	})
}

func TestSubjects(t *testing.T) {
	s := Subjects{Prefix: "ponens", Partitions: 16}
	for _, tc := range []struct{ got, want string }{
		{s.Event("run-a"), "ponens.events.run-a"},
		{s.Event("a.b"), "ponens.events.~YS5i"},
		{s.EventsIn(), "ponens.events.*"},
		{s.PartitionTransform(), "ponens.events.p.{{partition(16,1)}}.{{wildcard(1)}}"},
		{s.Partition(3), "ponens.events.p.3.*"},
		{s.DeadLetter(ReasonTooLarge), "ponens.dlq.too-large"},
		{s.DeadLettersIn(), "ponens.dlq.>"},
		{EventMsgID("run-a", 7), "run-a:7"},
		{EventMsgID("a ", 7), "~YSA:7"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	// Same as EventMsgID for every runId that is a token.
	if EventMsgID("run-a", 7) != EventMsgID("run-a", 7) {
		t.Error("EventMsgID differs from EventMsgID on a plain runId")
	}
	// Distinct where header encoding would merge EventMsgIDs.
	if EventMsgID("a\n", 1) == EventMsgID("a ", 1) || EventMsgID(" a", 1) == EventMsgID("a", 1) {
		t.Error("EventMsgID merges runIds")
	}
	for i := range 1000 {
		if k := s.PartitionOf(fmt.Sprintf("run %d", i)); k < 0 || k >= 16 {
			t.Fatalf("PartitionOf = %d", k)
		}
	}
}

func TestDeadLetterReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&FieldError{Err: ErrMalformedJSON}, ReasonMalformed},
		{fmt.Errorf("x: %w", &FieldError{Err: ErrUnknownType}), ReasonUnknownType},
		{DecodeErrors{newDecodeError("f", 1, 1, &FieldError{Err: ErrMissingField}), newDecodeError("f", 2, 1, &FieldError{Err: ErrTooLarge})}, ReasonTooLarge},
		{&FieldError{Err: ErrSeqGap}, ReasonSeqGap},
		{&FieldError{Err: ErrSeqRepeat}, ReasonSeqRepeat},
		{&FieldError{Err: ErrAfterEnd}, ReasonAfterEnd},
		{&FieldError{Err: ErrUnknownField}, ReasonInvalid},
		{errors.New("other"), ReasonInvalid},
	} {
		if got := DeadLetterReason(tc.err); got != tc.want {
			t.Errorf("DeadLetterReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestDecodeEvent(t *testing.T) {
	// Any seq: no ordering check.
	ev, err := DecodeEvent("req", []byte(line("r", 42, "action")+"\n"))
	if err != nil || ev.Seq != 42 || ev.Action == nil {
		t.Fatalf("DecodeEvent = %+v, %v", ev, err)
	}
	// Pretty-printed, over several lines.
	pretty := "{\n  \"v\": 1,\n  \"runId\": \"r\",\n  \"seq\": 2,\n  \"ts\": \"2025-01-01T00:00:00Z\",\n  \"type\": \"action\",\n  \"action\": {\"type\": \"\"}\n}\n"
	for _, tc := range []struct {
		name, input, want string
	}{
		{"invalid", pretty, `req:7:22: action.type: missing field: expected a non-empty string`},
		{"malformed", `{"v":1,"runId":`, `req:1:16: malformed JSON: unexpected end of line`},
		{"empty", "  \n", `req:1:1: malformed JSON: expected an event object, got nothing`},
		{"unknown type", `{"v":1,"runId":"r","seq":1,"ts":"2025-01-01T00:00:00Z","type":"nope"}`, `req:1:63: type: unknown event type: expected one of run.start, run.finish, run.error, run.cancel, action, artifact, residual, telemetry, got "nope"`},
		{"two problems", `{"v":1,"runId":"r","seq":"1","ts":"2025-01-01T00:00:00Z","type":"run.start","x":1}`, "req:1:26: seq: wrong type: expected a non-negative integer, got \"1\"\nreq:1:77: x: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEvent("req", []byte(tc.input))
			var errs DecodeErrors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T %v, want DecodeErrors", err, err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if strings.Count(tc.want, "\n")+1 != len(errs) {
				t.Errorf("%d problems", len(errs))
			}
		})
	}
}
