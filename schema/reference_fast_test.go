package schema

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// compareReferencePaths fails unless DecodeReferenceWarn gives on data
// what the general conversion gives (events, warnings and error), and,
// when the fast conversion accepts data, unless that one gives the same
// events with no warning and no error. It reports whether the fast one
// accepted.
func compareReferencePaths(t *testing.T, data []byte) bool {
	t.Helper()
	slow, slowWarn, slowErr := DecodeReferenceGeneral("f.json", data)
	got, gotWarn, gotErr := DecodeReferenceWarn("f.json", data)
	if !reflect.DeepEqual(got, slow) || errText(gotErr) != errText(slowErr) || errText(gotWarn) != errText(slowWarn) {
		t.Fatalf("DecodeReferenceWarn differs from the general conversion on %q:\nevents %#v\nwant   %#v\nwarnings %v\nwant     %v\nerror %v\nwant  %v",
			data, got, slow, gotWarn, slowWarn, gotErr, slowErr)
	}
	fast, ok := DecodeReferenceFast(data)
	var streamed []Event
	streamOK := EachReferenceEvent(data, func(e *Event) { streamed = append(streamed, *e) })
	if streamOK != ok {
		t.Fatalf("EachReferenceEvent handed every event: %v, the fast conversion accepted: %v, on %q", streamOK, ok, data)
	}
	if !ok {
		return false
	}
	if !reflect.DeepEqual(streamed, fast) {
		t.Fatalf("EachReferenceEvent differs from the fast conversion on %q:\nstreamed %#v\nfast     %#v", data, streamed, fast)
	}
	if slowErr != nil || slowWarn != nil {
		t.Fatalf("the fast conversion accepts %q, which has problems or warnings: %v %v", data, slowErr, slowWarn)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("conversions disagree on %q:\nfast %#v\nslow %#v", data, fast, slow)
	}
	return true
}

// errText is err's message, or "" for none.
func errText(err error) string {
	if err == nil || reflect.ValueOf(err).IsNil() {
		return ""
	}
	return err.Error()
}

// TestDecodeReferenceFastMatchesSlow: on every reference trace of the
// repository's testdata and examples, the fast conversion gives what the
// general one gives, and it accepts the clean ones.
func TestDecodeReferenceFastMatchesSlow(t *testing.T) {
	var files []string
	for _, root := range []string{"../testdata", "../examples", "testdata"} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(p, ".json") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fast := 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !IsReference(data) || !bytes.Contains(data, []byte(`"actions"`)) {
			continue
		}
		if compareReferencePaths(t, data) {
			fast++
		} else if _, w, err := DecodeReferenceGeneral(p, data); err == nil && w == nil {
			t.Errorf("%s: the fast conversion gives up on a clean trace", p)
		}
	}
	if fast < 8 {
		t.Errorf("the fast conversion accepted %d reference traces of testdata and examples, want at least 8", fast)
	}
}

// TestDecodeReferenceFastCases: both conversions agree on the forms real
// files take; those read with no warning take the fast one.
func TestDecodeReferenceFastCases(t *testing.T) {
	const head = `{"trace_id": "t", "trigger": {"type": "UserRequest"}, `
	for _, tc := range []struct {
		name, trace string
		fast        bool
	}{
		{"minimal", `{"trace_id": "t", "actions": []}`, true},
		{"nulls", head + `"actions": [{"id": 1, "type": "A", "label": null, "inputs": null, "outputs": null, "evidence": null, "request": null}], "artifacts": null, "residuals": null, "telemetry": null, "outcome": null, "agent": null, "high_stakes_paths": null}`, true},
		{"empties", head + `"actions": [{"id": 1, "type": "A", "label": "", "status": "", "inputs": [], "outputs": [], "evidence": []}], "artifacts": [], "residuals": [], "telemetry": [], "agent": "", "high_stakes_paths": []}`, true},
		{"ids as strings and numbers", head + `"actions": [{"id": "2", "type": "B", "inputs": 7, "outputs": ["x", 8]}, {"id": 1, "type": "A", "inputs": "y"}], "artifacts": [{"artifact_id": 7, "artifact_type": "T", "producer_action_id": "1", "derived_from": "y", "supersedes": [8]}, {"artifact_id": "x", "artifact_type": "T", "producer_action_id": null}], "outcome": "ProcessAborted"}`, true},
		{"produced outputs", head + `"actions": [{"id": 1, "type": "A", "outputs": []}], "artifacts": [{"artifact_id": "a", "artifact_type": "T", "producer_action_id": 1}]}`, true},
		{"derived status", head + `"actions": [{"id": 1, "type": "RunTests", "status": "", "result_summary": "3 passed"}, {"id": 2, "type": "X", "status": ""}]}`, true},
		{"unknown members everywhere", head + `"x": [1, {"y" : 2}], "extra": {}, "actions": [{"id": 1, "type": "A", "extra": 1, "artifacts": [], "Type": "B", "evidence": [{"type": "FileRef", "ref": "", "line": 3, "extra": null}]}], "artifacts": [{"artifact_id": "a", "artifact_type": "T", "extra": 2, "zz": null, "payload": {"a" :  [1, 2.5e3, true, false, null, "\u00e9"]}}]}`, true},
		{"escapes and unicode", head + `"agent": "caf\u00e9 \"x\"", "actions": [{"id": 1, "type": "Édit", "label": "tab\there", "evidence": [{"type": "FileRef", "ref": "\/a"}]}]}`, true},
		{"timestamps", head + `"actions": [{"id": 1, "type": "A"}, {"id": 2, "type": "B", "timestamp": "2026-01-01T00:00:01Z"}], "artifacts": [{"artifact_id": "a", "artifact_type": "T", "created_at": "2026-01-01T00:00:00.5+01:00"}]}`, true},
		{"residuals and telemetry", head + `"actions": [], "residuals": [{"id": "r1", "kind": "k"}, {"id": 3}, {"id": ""}, {"id": null}, {"kind": "k"}, {"id": {}}], "telemetry": [1, "x", {"a": 1}], "outcome": {"type": "ProcessInterrupted", "why": "x"}}`, true},
		{"outcome without type", head + `"actions": [], "outcome": {"why": "x"}}`, false},
		{"unknown outcome", head + `"actions": [], "outcome": "Done"}`, false},
		{"outcome type twice", head + `"actions": [], "outcome": {"type": "ProcessAborted", "type": "ProcessCompleted"}}`, false},
		{"key twice", head + `"actions": [{"id": 1, "type": "A", "type": "B"}]}`, false},
		{"unknown key twice", head + `"actions": [{"id": 1, "type": "A", "z": 1, "z": 2}]}`, false},
		{"escaped key", head + `"actions": [{"id": 1, "typ\u0065": "A"}]}`, false},
		{"number as string", head + `"actions": [{"id": 1, "type": "A", "label": 5}]}`, false},
		{"string as list", head + `"high_stakes_paths": "src", "actions": []}`, false},
		{"repeated id", head + `"actions": [{"id": 1, "type": "A"}, {"id": 1, "type": "B"}]}`, false},
		{"unsorted ids", head + `"actions": [{"id": 3, "type": "A"}, {"id": 1, "type": "B"}, {"id": 2, "type": "C"}]}`, true},
		{"missing id", head + `"actions": [{"type": "A"}]}`, false},
		{"float id", head + `"actions": [{"id": 1.0, "type": "A"}]}`, false},
		{"missing actions", `{"trace_id": "t"}`, false},
		{"missing trace id", `{"actions": []}`, false},
		{"not an object", `[1]`, false},
		{"malformed", head + `"actions": [}`, false},
		{"trailing data", `{"trace_id": "t", "actions": []} x`, false},
		{"control character", "{\"trace_id\": \"t\x01\", \"actions\": []}", false},
		{"invalid utf-8", "{\"trace_id\": \"t\xff\", \"actions\": [], \"x\xfe\": 1}", false},
		{"invalid utf-8 in a value", "{\"trace_id\": \"t\xff\", \"actions\": []}", true},
		{"bad number", `{"trace_id": "t", "actions": [], "x": 01}`, false},
		{"evidence not an object", head + `"actions": [{"id": 1, "type": "A", "evidence": ["src/a.py"]}]}`, false},
		{"null artifact id", head + `"actions": [], "artifacts": [{"artifact_id": null, "artifact_type": "T"}]}`, false},
		{"invalid event", head + `"actions": [{"id": 1}]}`, false},
		{"null type", head + `"actions": [{"id": 1, "type": null}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compareReferencePaths(t, []byte(tc.trace)); got != tc.fast {
				t.Errorf("fast conversion accepted: %v, want %v", got, tc.fast)
			}
		})
	}
}

// FuzzDecodeReferenceFast compares the fast conversion of a reference
// trace with the general one on every input.
func FuzzDecodeReferenceFast(f *testing.F) {
	for _, data := range referenceFixtures(f) {
		f.Add(data)
	}
	restore, _ := ReadAheadEverywhere() // any array with a place to begin is read ahead
	defer restore()
	f.Fuzz(func(t *testing.T, data []byte) {
		compareReferencePaths(t, data)
	})
}

// TestDecodeReferenceReadAhead: reading the second half of the actions
// ahead, from wherever an element may begin, gives what reading them in
// order gives, on the cases and the fixtures; where the place is not an
// element of the actions (one of an action's evidence, an artifact) the
// read-ahead is dropped.
func TestDecodeReferenceReadAhead(t *testing.T) {
	restore, joins := ReadAheadEverywhere()
	defer restore()
	before := joins()
	const head = `{"trace_id": "t", "actions": [`
	ev := `{"type": "FileRef", "ref": "a"}, {"type": "FileRef", "ref": "b"}, {"type": "FileRef", "ref": "c"}, {"type": "FileRef", "ref": "d"}`
	for _, tc := range []struct {
		name, trace string
		fast        bool
	}{
		{"four actions", head + `{"id": 1, "type": "A"}, {"id": 2, "type": "B"}, {"id": 4, "type": "C"}, {"id": 3, "type": "D"}]}`, true},
		{"evidence across the middle", head + `{"id": 1, "type": "A"}, {"id": 2, "type": "B", "evidence": [` + ev + `]}, {"id": 3, "type": "C"}, {"id": 4, "type": "D"}]}`, true},
		{"artifacts past the middle", head + `{"id": 1, "type": "A"}], "artifacts": [{"artifact_id": "a", "artifact_type": "T"}, {"artifact_id": "b", "artifact_type": "T"}, {"artifact_id": "c", "artifact_type": "T"}]}`, true},
		{"a repeated id ahead", head + `{"id": 1, "type": "A"}, {"id": 2, "type": "B"}, {"id": 3, "type": "C"}, {"id": 1, "type": "D"}]}`, false},
		{"a repeated key ahead", head + `{"id": 1, "type": "A"}, {"id": 2, "type": "B"}, {"id": 3, "type": "C"}, {"id": 4, "type": "D", "type": "E"}]}`, false},
		{"malformed ahead", head + `{"id": 1, "type": "A"}, {"id": 2, "type": "B"}, {"id": 3, "type": "C"}, {"id": 4, "type": "D"]}`, false},
		{"no id ahead, the array left open", head + `{"id": 1, "type": "A"}, {"id": 2, "type": "B"}, {"id": 3, "type": "C"}, {"type": "D"}, "x": 1}`, false},
		// Nesting at the scanner's bound inside an evidence entry: read alike
		// by every reader, whether it indexes the actions first or not.
		{"evidence nested to the bound", head + `{"id": 1, "type": "A", "evidence": [{"type": "T", "deep": ` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}]}]}`, true},
		{"evidence nested past the bound", head + `{"id": 1, "type": "A", "evidence": [{"type": "T", "deep": ` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}]}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compareReferencePaths(t, []byte(tc.trace)); got != tc.fast {
				t.Errorf("fast conversion accepted: %v, want %v", got, tc.fast)
			}
		})
	}
	for name, data := range referenceFixtures(t) {
		t.Run(name, func(t *testing.T) { compareReferencePaths(t, data) })
	}
	if runtime.GOMAXPROCS(0) > 1 && joins() == before {
		t.Error("no actions were read ahead: the test does not try what it is for")
	}
}
