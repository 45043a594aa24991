package schema

import (
	"os"
	"testing"
)

func TestDecodeDetectsTheForm(t *testing.T) {
	stream, err := os.ReadFile("testdata/stream.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fixtures := referenceFixtures(t)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"pretty-printed reference trace", fixtures["deploy_aborted.json"], "run.start artifact:note-1"},
		{"one-line reference trace", fixtures["minimal.json"], "run.start action:1"},
		{"event stream", stream, "run.start run.start action:1"},
		{"one-event stream", []byte(line("a", 1, "run.start")), "run.start"},
	} {
		events, err := Decode(tc.name, tc.data, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := shape(events); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("%s: got %s, want it to start with %s", tc.name, got, tc.want)
		}
	}
}

func TestDecodeErrorsOfEachForm(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		// A broken pretty-printed trace gets the reference decoder's error,
		// not one per line.
		{"broken reference", "{\n  \"trace_id\": \"t\",\n  \"actions\": [}\n", "trace.json:3:15: malformed JSON: invalid character '}' looking for beginning of value"},
		{"event stream", "{\"v\":1}\n", "trace.json:1:1: runId: missing field: expected a non-empty string"},
		{"object without actions", `{"trace_id": "t", "artifacts": []}`, "trace.json:1:2: trace_id: unknown field\ntrace.json:1:19: artifacts: unknown field"},
	} {
		_, err := Decode("trace.json", []byte(tc.data), 0)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
