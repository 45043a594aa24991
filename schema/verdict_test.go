package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestDecodeSummary(t *testing.T) {
	data, err := os.ReadFile("testdata/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if s.FormatVersion != FormatVersion || len(s.Rules) != 2 || s.Rules[1].Formula != nil ||
		s.Traces[1].Outcome != OutcomeErrored || s.Matrix.Cells[1][1] != StatusViolated || s.Counts[StatusUnresolved] != 1 {
		t.Errorf("summary = %+v", s)
	}
	// Re-encoding gives the same document.
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if json.Unmarshal(data, &a) != nil || json.Unmarshal(out, &b) != nil {
		t.Fatal("unmarshal")
	}
	if x, y := canonicalJSON(t, a), canonicalJSON(t, b); x != y {
		t.Errorf("re-encoded summary differs:\n%s\nwant\n%s", y, x)
	}
}

func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCountsAlwaysHaveEveryStatus(t *testing.T) {
	out, err := json.Marshal(Summary{FormatVersion: FormatVersion, Counts: Counts{StatusViolated: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"counts":{"pending":0,"satisfied":0,"unresolved":0,"violated":2}`; !strings.Contains(string(out), want) {
		t.Errorf("got %s, want it to contain %s", out, want)
	}
}

func TestDecodeSummaryErrors(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
		sentinel  error
	}{
		{`{"formatVersion": 2, "rules": []}`, `summary.json: formatVersion 2 is not supported by this build (supports 1)`, ErrUnsupportedVersion},
		{`{"rules": []}`, `summary.json:1:1: formatVersion: missing field: expected 1`, ErrMissingField},
		{"{\"formatVersion\": 1,\n \"rules\": {}}", `summary.json:2:11: rules: wrong type: expected an array, got object`, ErrWrongType},
		{`{"formatVersion": 1, `, `summary.json:1:21: malformed JSON: unexpected end of JSON input`, ErrMalformedJSON},
		{`[]`, `summary.json:1:1: wrong type: expected an object, got an array`, ErrWrongType},
		{`{"formatVersion": 1, "matrix": {"rules": ["r"], "traces": [], "cells": []}}`, `summary.json: matrix.cells: invalid value: expected 1 rows, one per rule, got 0`, ErrInvalidValue},
		{`{"formatVersion": 1, "matrix": {"rules": ["r"], "traces": ["t"], "cells": [["ok"]]}}`, `summary.json: matrix.cells[0][0]: invalid value: expected satisfied, violated, pending or unresolved, got "ok"`, ErrInvalidValue},
		{`{"formatVersion": 1, "matrix": {"rules": ["r"], "traces": ["t"], "cells": [["satisfied"]], "results": [["maybe"]]}}`, `summary.json: matrix.results[0][0]: invalid value: expected pass, fail or not_applicable, got "maybe"`, ErrInvalidValue},
		{`{"formatVersion": 1, "matrix": {"rules": ["r"], "traces": ["t"], "cells": [["satisfied"]], "results": []}}`, `summary.json: matrix.results: invalid value: expected the shape of matrix.cells, got another shape`, ErrInvalidValue},
	} {
		_, err := DecodeSummary([]byte(tc.doc))
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.sentinel) {
			t.Errorf("DecodeSummary(%s) = %v\nwant %s", tc.doc, err, tc.want)
		}
	}
}

func TestVerdictEvents(t *testing.T) {
	data, err := os.ReadFile("testdata/deploy_aborted.verdicts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	verdicts, err := DecodeVerdicts(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(verdicts) != 3 || verdicts[0].Cause.Event.Action.ID != 2 || verdicts[1].Leaning != LeaningSatisfy || verdicts[2].Status != StatusUnresolved {
		t.Fatalf("verdicts = %+v", verdicts)
	}
	// Writing them back gives the file, minus the member this build does
	// not know, and stamps formatVersion first.
	var buf bytes.Buffer
	for _, v := range verdicts {
		if err := json.NewEncoder(&buf).Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Replace(string(data), `,"detail":"a field added by a later build"`, "", 1)
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestDecodeVerdictsErrors(t *testing.T) {
	ok := `{"runId":"r","seq":1,"rule":{"id":"a","description":""},"status":"violated","mode":"observe"}`
	for _, tc := range []struct {
		input, want string
		sentinel    error
	}{
		{ok + "\n" + `{"formatVersion":2,"runId":"r"}`, `verdicts.jsonl:2: formatVersion 2 is not supported by this build (supports 1)`, ErrUnsupportedVersion},
		{ok + "\n\n" + `{"runId":"r","seq":"2"}`, `verdicts.jsonl:3:20: seq: wrong type: expected a non-negative integer, got string`, ErrWrongType},
		{`{"runId":`, `verdicts.jsonl:1:9: malformed JSON: unexpected end of JSON input`, ErrMalformedJSON},
		{`null`, `verdicts.jsonl:1:1: wrong type: expected an object, got null`, ErrWrongType},
	} {
		_, err := DecodeVerdicts(strings.NewReader(tc.input))
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.sentinel) {
			t.Errorf("DecodeVerdicts(%s) = %v\nwant %s", tc.input, err, tc.want)
		}
	}
}
