package tracefile

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ponens/ponens/schema"
)

// FuzzScan checks that a file Scan reads as it goes gives the events and
// the error ReadFile gives for it, and that Scan leaves to ReadFile every
// reference trace. The seed corpus is testdata/fuzz/FuzzScan and the
// repository's test traces.
func FuzzScan(f *testing.F) {
	for _, p := range []string{"../../schema/testdata/stream.jsonl", "../../schema/testdata/reference/deploy_aborted.json", "../../examples/traces/fleet.jsonl"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	dir := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		p := filepath.Join(dir, fmt.Sprintf("t%d.jsonl", n))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		l := Limits{MaxLine: 4096}
		var got []schema.Event
		streamed, err := Scan(p, l, func(ev *schema.Event) { got = append(got, *ev) })
		if !streamed {
			return
		}
		if schema.IsReference(data) {
			t.Fatalf("Scan read a reference trace as a stream")
		}
		whole, werr := ReadFile(p, l)
		if fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("Scan error %v, ReadFile error %v", err, werr)
		}
		var want []schema.Event
		for _, r := range whole.Runs {
			want = append(want, r.Events...)
		}
		if len(got) != len(want) {
			t.Fatalf("Scan gave %d events, ReadFile %d", len(got), len(want))
		}
		// Order differs (file order against run order); compare per run.
		if !reflect.DeepEqual(schema.SplitRuns(got), whole.Runs) {
			t.Fatalf("Scan and ReadFile give different runs")
		}
	})
}

// TestScanTooLarge checks that Scan refuses a file over trace.max_file_bytes
// before reading it, as ReadFile does.
func TestScanTooLarge(t *testing.T) {
	data, err := os.ReadFile("../../examples/traces/fleet.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	l := Limits{MaxFileBytes: int64(len(data) - 1)}
	calls := 0
	_, err = Scan("../../examples/traces/fleet.jsonl", l, func(*schema.Event) { calls++ })
	_, werr := ReadFile("../../examples/traces/fleet.jsonl", l)
	if err == nil || fmt.Sprint(err) != fmt.Sprint(werr) || calls != 0 {
		t.Errorf("Scan: %v after %d events, ReadFile: %v", err, calls, werr)
	}
}
