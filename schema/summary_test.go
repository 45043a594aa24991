package schema

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestSummaryFold(t *testing.T) {
	f, err := NewSummaryFold([]RuleManifestEntry{{ID: "a", Mode: ModeObserve, Text: "G p"}, {ID: "b", Mode: ModeDeny, Text: "G q"}})
	if err != nil {
		t.Fatal(err)
	}
	evs := []Event{{V: 1, RunID: "r1", Seq: 1, Type: TypeRunStart}, {V: 1, RunID: "r1", Seq: 2, Type: TypeRunFinish}}
	stream := []VerdictEvent{
		{RunID: "r1", Seq: 1, Rule: RuleRef{ID: "a"}, Status: StatusPending, Leaning: LeaningViolate},
		{RunID: "r1", Seq: 2, Rule: RuleRef{ID: "a"}, Status: StatusViolated},
	}
	col, err := f.Add(TraceManifestEntry{ID: "t1", RunID: "r1", Verdicts: "t1.verdicts.jsonl"}, evs, stream, nil)
	if err != nil {
		t.Fatal(err)
	}
	if col[0] != StatusViolated || col[1] != StatusSatisfied {
		t.Fatalf("column %v: the last verdict wins, a rule without verdicts is satisfied", col)
	}
	s := f.Summary()
	if s.Traces[0].Events != 2 || s.Traces[0].Outcome != OutcomeCompleted || s.Matrix.Results != nil {
		t.Errorf("summary %+v", s)
	}
	if s.Counts[StatusViolated] != 1 || s.Counts[StatusSatisfied] != 1 || !strings.HasPrefix(s.ContentHash, "sha256:") {
		t.Errorf("counts %v, hash %s", s.Counts, s.ContentHash)
	}
	if _, err := f.Add(TraceManifestEntry{ID: "t1", RunID: "r1"}, evs, nil, nil); err == nil {
		t.Error("a taken trace id was accepted")
	}
	bad := []VerdictEvent{{RunID: "r1", Rule: RuleRef{ID: "zz"}, Status: StatusViolated}}
	if _, err := f.Add(TraceManifestEntry{ID: "t2", RunID: "r1"}, evs, bad, nil); err == nil || !strings.Contains(err.Error(), `rule "zz", which is not checked`) {
		t.Errorf("an unknown rule: %v", err)
	}
	if len(f.Summary().Traces) != 1 {
		t.Error("a refused trace was recorded")
	}
	if _, err := NewSummaryFold([]RuleManifestEntry{{ID: "a"}, {ID: "a"}}); err == nil {
		t.Error("a rule listed twice was accepted")
	}
}

// stretchEvents is a run of n events, each different from the others, so
// that lines out of order change the content hash.
func stretchEvents(run string, n int) []Event {
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = Event{V: 1, RunID: run, Seq: uint64(i + 1), TS: time.Unix(int64(i), 0).UTC(), Type: TypeAction,
			Action: &Action{ID: int64(i + 1), Type: "EditFile", Outputs: []string{fmt.Sprintf("src/f%d.go", i)}}}
	}
	return evs
}

func TestSummaryFoldHashesEveryEventInOrder(t *testing.T) {
	evs := stretchEvents("r1", 12*eventStretch+17) // more stretches than are encoded ahead: buffers are reused
	// The oracle: each event's line as encoding/json writes it, in order.
	var lines bytes.Buffer
	for i := range evs {
		line, err := EncodeEventLine(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(line)
	}
	want := func() string {
		f, err := NewSummaryFold(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.AddEncoded(TraceManifestEntry{ID: "t1", RunID: "r1", Events: len(evs)}, bytes.NewReader(lines.Bytes()), nil, nil); err != nil {
			t.Fatal(err)
		}
		return f.Summary().ContentHash
	}()
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			f, err := NewSummaryFold(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Add(TraceManifestEntry{ID: "t1", RunID: "r1"}, evs, nil, nil); err != nil {
				t.Fatal(err)
			}
			if got := f.Summary().ContentHash; got != want {
				t.Errorf("content hash %s, want %s (the lines encoded one by one, in order)", got, want)
			}
		})
	}
}

func TestSummaryFoldUnencodableEventRecordsNothing(t *testing.T) {
	good := stretchEvents("r1", 5)
	bad := stretchEvents("r2", 2*eventStretch+9)
	bad[2*eventStretch+4].TS = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // encoding/json refuses it
	hashOf := func(withBad bool) string {
		f, err := NewSummaryFold([]RuleManifestEntry{{ID: "a", Mode: ModeObserve, Text: "G p"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Add(TraceManifestEntry{ID: "t1", RunID: "r1"}, good, nil, nil); err != nil {
			t.Fatal(err)
		}
		if withBad {
			_, err := f.Add(TraceManifestEntry{ID: "t2", RunID: "r2"}, bad, nil, nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("trace t2: event %d:", 2*eventStretch+5)) {
				t.Fatalf("an event that cannot be encoded: %v", err)
			}
		}
		if _, err := f.Add(TraceManifestEntry{ID: "t3", RunID: "r1"}, good, nil, nil); err != nil {
			t.Fatal(err)
		}
		s := f.Summary()
		if len(s.Traces) != 2 || len(s.Matrix.Cells[0]) != 2 {
			t.Fatalf("traces %+v: the refused trace was recorded", s.Traces)
		}
		return s.ContentHash
	}
	if with, without := hashOf(true), hashOf(false); with != without {
		t.Errorf("content hash %s after a refused trace, %s without it: the refused trace's bytes stayed in the hash", with, without)
	}
}

// failingReader yields n bytes of lines, then fails.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("disk gone")
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = '\n'
	}
	r.n -= k
	return k, nil
}

func TestSummaryFoldEncodedReadErrorRecordsNothing(t *testing.T) {
	hashOf := func(withBad bool) string {
		f, err := NewSummaryFold(nil)
		if err != nil {
			t.Fatal(err)
		}
		if withBad {
			_, err := f.AddEncoded(TraceManifestEntry{ID: "t1", RunID: "r1", Events: 3}, &failingReader{n: 100000}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), "trace t1: reading its events: disk gone") {
				t.Fatalf("a failing reader: %v", err)
			}
		}
		if _, err := f.AddEncoded(TraceManifestEntry{ID: "t2", RunID: "r1", Events: 1}, strings.NewReader("{}\n"), nil, nil); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Summary().Traces); n != 1 {
			t.Fatalf("%d traces: the refused trace was recorded", n)
		}
		return f.Summary().ContentHash
	}
	if with, without := hashOf(true), hashOf(false); with != without {
		t.Errorf("content hash %s after a failed read, %s without it", with, without)
	}
}
