package schema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDecodeJSONLStream(t *testing.T) {
	f, err := os.Open("testdata/stream.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := DecodeJSONL("stream.jsonl", f, 0)
	if err != nil {
		t.Fatal(err)
	}
	runs := SplitRuns(events)
	if len(runs) != 2 || runs[0].ID != "run-a" || runs[1].ID != "run-b" {
		t.Fatalf("runs = %+v", runs)
	}
	want := []string{
		"run.start action:1 action:2 artifact:obs-1 residual:res-9 telemetry action:3 run.error",
		"run.start action:1 action:2",
	}
	for i, r := range runs {
		if got := shape(r.Events); got != want[i] {
			t.Errorf("run %s:\n got %s\nwant %s", r.ID, got, want[i])
		}
	}
	if got := runs[0].Events[2].Action.Artifacts[0].ID; got != "cmd-9" {
		t.Errorf("inline artifact = %q", got)
	}
}

// line builds a valid event line of run r.
func line(r string, seq int, typ string) string {
	body := map[string]string{
		"run.start":  "",
		"run.finish": "",
		"action":     `,"action":{"type":"ReadFile"}`,
	}[typ]
	return fmt.Sprintf(`{"v":1,"runId":%q,"seq":%d,"ts":"2025-01-01T00:00:00Z","type":%q%s}`, r, seq, typ, body)
}

func TestDecodeJSONLErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		maxLine int
		events  int // events that pass
		want    string
	}{
		{
			name:   "truncated line",
			input:  line("a", 1, "run.start") + "\n" + `{"v":1,"runId":"a"` + "\n",
			events: 1,
			want:   `t.jsonl:2:19: malformed JSON: unexpected end of line`,
		},
		{
			name:  "syntax error",
			input: `{"v":1,}`,
			want:  `t.jsonl:1:8: malformed JSON: invalid character '}' looking for beginning of object key string`,
		},
		{
			name:  "two values on a line",
			input: line("a", 1, "run.start") + ` {"v":1}`,
			want:  `t.jsonl:1:76: malformed JSON: unexpected data after the event`,
		},
		{
			name: "interleaved runs, blank lines and CRLF are fine; gap, repeat and after-end are not",
			input: strings.Join([]string{
				line("a", 1, "run.start"),
				line("b", 1, "run.start"),
				"",
				line("a", 2, "action"),
				line("b", 3, "action"), // gap: b continues from 3
				line("b", 4, "action"),
				line("a", 2, "action"), // repeat
				line("a", 3, "run.finish"),
				line("a", 4, "action"), // after the end
				"   ",
			}, "\r\n"),
			events: 5,
			want: "t.jsonl:5:26: seq: seq gap: expected 2, got 3\n" +
				"t.jsonl:7:26: seq: seq repeated: expected 3, got 2\n" +
				"t.jsonl:9:16: runId: event after end of run: expected no event after the run.finish at line 8, got seq 4",
		},
		{
			name:  "first seq",
			input: line("a", 2, "run.start"),
			want:  `t.jsonl:1:26: seq: seq gap: expected 1, got 2`,
		},
		{
			name:    "line too long",
			input:   line("a", 1, "run.start") + "\n" + `{"v":1,"runId":"` + strings.Repeat("x", 100) + `"}` + "\n" + line("a", 2, "run.finish"),
			maxLine: 80,
			events:  2,
			want:    `t.jsonl:2: too large: expected a line of at most 80 bytes`,
		},
		{
			name:  "every problem of a line, in column order",
			input: `{"v":1,"runId":"r","seq":-1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"A","bogus":1},"more":true}`,
			want: "t.jsonl:1:26: seq: wrong type: expected a non-negative integer, got -1\n" +
				"t.jsonl:1:94: action.bogus: unknown field\n" +
				"t.jsonl:1:105: more: unknown field",
		},
		{
			name:   "extra, payload and telemetry are free-form",
			input:  `{"v":1,"runId":"r","seq":1,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":"A","payload":{"x":[1]},"extra":{"any":{"thing":null}}}}`,
			events: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, err := DecodeJSONL("t.jsonl", strings.NewReader(tc.input), tc.maxLine)
			if len(events) != tc.events {
				t.Errorf("%d events pass, want %d", len(events), tc.events)
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestDecodeJSONLStopsAfter100Problems(t *testing.T) {
	input := strings.Repeat("nope\n", 150)
	_, err := DecodeJSONL("t.jsonl", strings.NewReader(input), 0)
	var errs DecodeErrors
	if !errors.As(err, &errs) || len(errs) != 101 {
		t.Fatalf("got %d problems, want 100 and a last one", len(errs))
	}
	if got := errs[100].Error(); got != "t.jsonl:101: too many errors: stopped after 100" {
		t.Errorf("last = %s", got)
	}
	if !errors.Is(err, ErrMalformedJSON) || !errors.Is(err, ErrTooManyErrors) {
		t.Error("errors.Is does not see the problems")
	}
}

func TestDecodeErrorRendering(t *testing.T) {
	for _, tc := range []struct {
		err  *DecodeError
		want string
	}{
		{&DecodeError{File: "a.jsonl", Line: 3, Col: 7, Field: "seq", Msg: "m"}, "a.jsonl:3:7: seq: m"},
		{&DecodeError{File: "a.jsonl", Line: 3, Msg: "m"}, "a.jsonl:3: m"},
		{&DecodeError{File: "a.jsonl", Col: 7, Msg: "m"}, "a.jsonl: m"},
		{&DecodeError{Field: "seq", Msg: "m"}, "seq: m"},
		{&DecodeError{Msg: "m"}, "m"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestScanJSONLBatchesMatches reads streams of several batches' worth of
// lines (interleaved runs; problems spread over the batches; more than 100
// problems) with ScanJSONL and with ScanJSONLBatches on 1, 2 and 4
// decoding goroutines, and wants the same events, in the same order, each
// encoded as AppendEventLine encodes it, and the same error.
func TestScanJSONLBatchesMatches(t *testing.T) {
	var valid []string
	for seq := 1; seq <= 300; seq++ {
		for r := range 7 {
			typ := "action"
			if seq == 1 {
				typ = "run.start"
			}
			valid = append(valid, line(fmt.Sprintf("r%d", r), seq, typ))
		}
	}
	broken := slices.Clone(valid)
	broken[700] = `{"v":1,}`                             // syntax error
	broken[1300] = broken[1299]                          // a repeated seq
	broken[1301] = "   "                                 // blank
	broken[1800] = strings.Repeat("x", 5000)             // too long
	broken[2099] = strings.TrimSuffix(broken[2099], "}") // truncated last line
	inputs := map[string]string{
		"valid":         strings.Join(valid, "\n") + "\n",
		"broken":        strings.Join(broken, "\r\n"),
		"many problems": strings.Repeat(valid[0]+"\n", 1500),
	}
	for name, input := range inputs {
		var want []Event
		wantErr := fmt.Sprint(ScanJSONL("t.jsonl", strings.NewReader(input), 4096, func(ev *Event) { want = append(want, *ev) }))
		if name == "valid" && (wantErr != "<nil>" || len(want) != len(valid)) {
			t.Fatalf("%s: %d events, error %s", name, len(want), wantErr)
		}
		if name != "valid" && wantErr == "<nil>" {
			t.Fatalf("%s: no error", name)
		}
		for _, workers := range []int{1, 2, 4} {
			var got []Event
			batches := 0
			gotErr := fmt.Sprint(ScanJSONLBatches("t.jsonl", strings.NewReader(input), 4096, workers, func(b ScannedEvents) {
				for i := range b.Events {
					if want, _ := AppendEventLine(nil, &b.Events[i]); !bytes.Equal(b.Encoded[i], want) {
						t.Fatalf("%s: event %d encoded as\n%s\nwant\n%s", name, len(got)+i+1, b.Encoded[i], want)
					}
				}
				got = append(got, b.Events...)
				batches++
			}))
			if gotErr != wantErr {
				t.Errorf("%s, %d workers: error\n%s\nwant\n%s", name, workers, gotErr, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %d workers: %d events differ from ScanJSONL's %d", name, workers, len(got), len(want))
			}
			if name == "valid" && batches < 2 {
				t.Errorf("%s: %d batches: the stream fits one batch, nothing is compared across batches", name, batches)
			}
		}
	}
}
