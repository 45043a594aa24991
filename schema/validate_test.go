package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// invalidEvents are one-line event streams that each break one rule of the
// envelope. validate is the message of Event.Validate ("" when decoding
// already fails); decode is DecodeJSONL's error for the file "t.jsonl".
var invalidEvents = []struct {
	name     string
	line     string
	validate string
	decode   string
	sentinel error
}{
	{
		name:     "version",
		line:     `{"v":2,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`,
		validate: `v: unsupported version: expected 1, got 2`,
		decode:   `t.jsonl:1:6: v: unsupported version: expected 1, got 2`,
		sentinel: ErrUnsupportedVersion,
	},
	{
		name:     "runId missing",
		line:     `{"v":1,"seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`,
		validate: `runId: missing field: expected a non-empty string`,
		decode:   `t.jsonl:1:1: runId: missing field: expected a non-empty string`,
		sentinel: ErrMissingField,
	},
	{
		name:     "runId too long",
		line:     `{"v":1,"runId":"` + strings.Repeat("r", 257) + `","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`,
		validate: `runId: too large: expected at most 256 bytes, got 257 bytes`,
		decode:   `t.jsonl:1:16: runId: too large: expected at most 256 bytes, got 257 bytes`,
		sentinel: ErrTooLarge,
	},
	{
		name:     "seq zero",
		line:     `{"v":1,"runId":"r1","seq":0,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`,
		validate: `seq: invalid value: expected an integer >= 1, got 0`,
		decode:   `t.jsonl:1:27: seq: invalid value: expected an integer >= 1, got 0`,
		sentinel: ErrInvalidValue,
	},
	{
		name:     "ts missing",
		line:     `{"v":1,"runId":"r1","seq":1,"type":"run.start"}`,
		validate: `ts: missing field: expected an RFC 3339 timestamp`,
		decode:   `t.jsonl:1:1: ts: missing field: expected an RFC 3339 timestamp`,
		sentinel: ErrMissingField,
	},
	{
		name:     "unknown type",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.pause"}`,
		validate: `type: unknown event type: expected one of run.start, run.finish, run.error, run.cancel, action, artifact, residual, telemetry, got "run.pause"`,
		decode:   `t.jsonl:1:64: type: unknown event type: expected one of run.start, run.finish, run.error, run.cancel, action, artifact, residual, telemetry, got "run.pause"`,
		sentinel: ErrUnknownType,
	},
	{
		name:     "body missing",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action"}`,
		validate: `action: missing field: expected a body for type "action"`,
		decode:   `t.jsonl:1:1: action: missing field: expected a body for type "action"`,
		sentinel: ErrMissingField,
	},
	{
		name:     "null body",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"artifact","artifact":null}`,
		validate: `artifact: missing field: expected a body for type "artifact"`,
		decode:   `t.jsonl:1:86: artifact: missing field: expected a body for type "artifact"`,
		sentinel: ErrMissingField,
	},
	{
		name:     "second body",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"ReadFile"},"artifact":{"artifact_id":"a","artifact_type":"T"}}`,
		validate: `artifact: unexpected field: expected only the action body for type "action"`,
		decode:   `t.jsonl:1:113: artifact: unexpected field: expected only the action body for type "action"`,
		sentinel: ErrUnexpectedField,
	},
	{
		name:     "telemetry on run.start",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start","telemetry":{"tokens":3}}`,
		validate: `telemetry: unexpected field: expected only the start body for type "run.start"`,
		decode:   `t.jsonl:1:88: telemetry: unexpected field: expected only the start body for type "run.start"`,
		sentinel: ErrUnexpectedField,
	},
	{
		name:     "telemetry missing",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"telemetry"}`,
		validate: `telemetry: missing field: expected a body for type "telemetry"`,
		decode:   `t.jsonl:1:1: telemetry: missing field: expected a body for type "telemetry"`,
		sentinel: ErrMissingField,
	},
	{
		name:     "action type empty",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"id":1,"type":""}}`,
		validate: `action.type: missing field: expected a non-empty string`,
		decode:   `t.jsonl:1:97: action.type: missing field: expected a non-empty string`,
		sentinel: ErrMissingField,
	},
	{
		name:     "action status",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"RunTests","status":"ok"}}`,
		validate: `action.status: invalid value: expected "", "completed" or "failed", got "ok"`,
		decode:   `t.jsonl:1:110: action.status: invalid value: expected "", "completed" or "failed", got "ok"`,
		sentinel: ErrInvalidValue,
	},
	{
		name:     "evidence type",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"ReadFile","evidence":[{"ref":"a.go"}]}}`,
		validate: `action.evidence[0].type: missing field: expected a non-empty string`,
		decode:   `t.jsonl:1:113: action.evidence[0].type: missing field: expected a non-empty string`,
		sentinel: ErrMissingField,
	},
	{
		name:     "inline artifact id",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"ReadFile","artifacts":[{"artifact_type":"SourceCode"}]}}`,
		validate: `action.artifacts[0].artifact_id: missing field: expected a non-empty string`,
		decode:   `t.jsonl:1:114: action.artifacts[0].artifact_id: missing field: expected a non-empty string`,
		sentinel: ErrMissingField,
	},
	{
		name:     "artifact id",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"artifact","artifact":{"artifact_id":"","artifact_type":"SourceCode"}}`,
		validate: `artifact.artifact_id: missing field: expected a non-empty string`,
		decode:   `t.jsonl:1:101: artifact.artifact_id: missing field: expected a non-empty string`,
		sentinel: ErrMissingField,
	},
	{
		name:     "artifact type",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"artifact","artifact":{"artifact_id":"a1"}}`,
		validate: `artifact.artifact_type: missing field: expected a non-empty string`,
		decode:   `t.jsonl:1:86: artifact.artifact_type: missing field: expected a non-empty string`,
		sentinel: ErrMissingField,
	},
	{
		name:     "residual type",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"residual","residual":{"artifact_id":"r1","artifact_type":"Observation"}}`,
		validate: `residual.artifact_type: invalid value: expected "Residual", got "Observation"`,
		decode:   `t.jsonl:1:122: residual.artifact_type: invalid value: expected "Residual", got "Observation"`,
		sentinel: ErrInvalidValue,
	},
	{
		name:     "unknown envelope field",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start","parent":"r0"}`,
		decode:   `t.jsonl:1:76: parent: unknown field`,
		sentinel: ErrUnknownField,
	},
	{
		name:     "unknown action field",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"ReadFile","lable":"x"}}`,
		decode:   `t.jsonl:1:101: action.lable: unknown field`,
		sentinel: ErrUnknownField,
	},
	{
		name:     "seq as string",
		line:     `{"v":1,"runId":"r1","seq":"1","ts":"2025-01-01T00:00:00Z","type":"run.start"}`,
		decode:   `t.jsonl:1:27: seq: wrong type: expected a non-negative integer, got "1"`,
		sentinel: ErrWrongType,
	},
	{
		name:     "ts not RFC 3339",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"yesterday","type":"run.start"}`,
		decode:   `t.jsonl:1:34: ts: wrong type: expected an RFC 3339 timestamp, got "yesterday"`,
		sentinel: ErrWrongType,
	},
	{
		name:     "inputs not strings",
		line:     `{"v":1,"runId":"r1","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"Verify","inputs":[3]}}`,
		decode:   `t.jsonl:1:109: action.inputs[0]: wrong type: expected a string, got 3`,
		sentinel: ErrWrongType,
	},
	{
		name:     "not an object",
		line:     `["v", 1]`,
		decode:   `t.jsonl:1:1: wrong type: expected an object, got an array`,
		sentinel: ErrWrongType,
	},
}

func TestValidate(t *testing.T) {
	for _, tc := range invalidEvents {
		if tc.validate == "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			var e Event
			if err := json.Unmarshal([]byte(tc.line), &e); err != nil {
				t.Fatal(err)
			}
			err := e.Validate()
			if err == nil || err.Error() != tc.validate {
				t.Fatalf("Validate() = %v\nwant        %s", err, tc.validate)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, tc.sentinel) {
				t.Errorf("Validate() = %#v, want a *FieldError wrapping %v", err, tc.sentinel)
			}
		})
	}
}

func TestValidateAcceptsOptionalBodies(t *testing.T) {
	ts := mustTime(t, "2025-01-01T00:00:00Z")
	for _, e := range []Event{
		{V: 1, RunID: "r", Seq: 1, TS: ts, Type: TypeRunStart},
		{V: 1, RunID: "r", Seq: 2, TS: ts, Type: TypeRunCancel},
		{V: 1, RunID: "r", Seq: 2, TS: ts, Type: TypeRunFinish, End: &RunEnd{Message: "done"}},
		{V: 1, RunID: "r", Seq: 2, TS: ts, Type: TypeTelemetry, Telemetry: json.RawMessage(`null`)},
		{V: 1, RunID: strings.Repeat("é", 128), Seq: 2, TS: ts, Type: TypeAction, Action: &Action{Type: "ReadFile", Status: ActionFailed}},
	} {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v", e.Type, err)
		}
	}
}

func TestDecodeInvalidEvents(t *testing.T) {
	for _, tc := range invalidEvents {
		t.Run(tc.name, func(t *testing.T) {
			events, err := DecodeJSONL("t.jsonl", strings.NewReader(tc.line), 0)
			if len(events) != 0 || err == nil || err.Error() != tc.decode {
				t.Fatalf("DecodeJSONL() = %d events, %v\nwant                   %s", len(events), err, tc.decode)
			}
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.sentinel) {
				t.Errorf("error %#v does not wrap a *DecodeError and %v", err, tc.sentinel)
			}
		})
	}
}
