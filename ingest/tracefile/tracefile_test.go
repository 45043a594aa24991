package tracefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ponens/ponens/internal/readlimit"
	"github.com/ponens/ponens/schema"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	runs, err := Read("../../schema/testdata/stream.jsonl", 0)
	if err != nil || len(runs) != 2 || runs[0].ID != "run-a" || len(runs[1].Events) != 3 {
		t.Errorf("stream: %v, %+v", err, runs)
	}

	runs, err = Read("../../schema/testdata/reference/deploy_aborted.json", 0)
	if err != nil || len(runs) != 1 || runs[0].ID != "tr-7d21e0" || runs[0].Events[len(runs[0].Events)-1].Type != schema.TypeRunError {
		t.Errorf("reference trace: %v, %+v", err, runs)
	}

	bad := write("bad.jsonl", `{"v":1,"runId":"r","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`+"\n"+`{"v":1}`+"\n")
	runs, err = Read(bad, 0)
	var errs schema.DecodeErrors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].File != bad || errs[0].Line != 2 || len(runs) != 1 {
		t.Errorf("bad stream: %v, %+v", err, runs)
	}

	if _, err := Read(filepath.Join(dir, "missing.jsonl"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadFile(t *testing.T) {
	f, err := ReadFile("../../schema/testdata/stream.jsonl", Limits{})
	if err != nil || f.Reference || len(f.Runs) != 2 || f.Warnings != nil {
		t.Errorf("stream: %v, %+v", err, f)
	}
	f, err = ReadFile("../../testdata/corpus/traces/refund_violating.json", Limits{})
	if err != nil || !f.Reference || len(f.Runs) != 1 || len(f.Warnings) != 4 {
		t.Errorf("reference trace: %v, %+v", err, f)
	}
	if _, err := ReadFile("missing.json", Limits{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// ReadFile holds the collector off while it decodes a reference trace
// and leaves its setting as it found it, whether the fast reader took the
// trace, gave it up to the general reader (warnings) or it was refused.
func TestReadFileRestoresTheCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(130))
	limit := debug.SetMemoryLimit(-1)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"trace_id": "t", "actions": [{"id": 1}, {"id": 1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		held bool // until Release
	}{
		{"../../schema/testdata/reference/deploy_aborted.json", true}, // clean
		{"../../testdata/corpus/traces/refund_violating.json", false}, // read with warnings
		{bad, false}, // refused: a repeated id
	} {
		f, err := ReadFile(c.path, Limits{})
		if !f.Reference && err == nil {
			t.Fatalf("%s: not read as a reference trace", c.path)
		}
		want := 130
		if c.held {
			want = -1
		}
		if p := gcPercent(); p != want {
			t.Errorf("%s: GC percent after ReadFile: %d, want %d", c.path, p, want)
		}
		f.Release()
		f.Release()
		if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 130 || l != limit {
			t.Errorf("%s: after Release: GC percent %d, memory limit %d; want 130 and %d", c.path, p, l, limit)
		}
	}
}

// gcPercent reads the collector's setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// EachReferenceEvent hands a clean reference trace's events, those
// ReadFile gives, with the collector tightened while it reads and
// restored after; it hands nothing and says so for an event stream, a
// trace with warnings and a refused one; trace.max_reference_bytes does
// not bound it, trace.max_file_bytes does.
func TestEachReferenceEvent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(130))
	clean := "../../schema/testdata/reference/deploy_aborted.json"
	f, err := ReadFile(clean, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f.Release()
	var got []schema.Event
	during := 0
	ref, ok, err := EachReferenceEvent(clean, Limits{MaxReferenceBytes: 100}, func(e *schema.Event) {
		got = append(got, *e)
		during = gcPercent()
	})
	if err != nil || !ref || !ok || !reflect.DeepEqual(got, f.Runs[0].Events) {
		t.Errorf("clean trace: ok %v, err %v, %d events, want the %d ReadFile gives", ok, err, len(got), len(f.Runs[0].Events))
	}
	if during != streamGCPercent || gcPercent() != 130 {
		t.Errorf("GC percent while handing events %d, after %d; want %d and 130", during, gcPercent(), streamGCPercent)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"trace_id": "t", "actions": [{"id": 1, "type": "A"}, {"id": 1, "type": "B"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../../schema/testdata/stream.jsonl", "../../testdata/corpus/traces/refund_violating.json", bad} {
		n := 0
		ref, ok, err := EachReferenceEvent(p, Limits{}, func(*schema.Event) { n++ })
		if ref != strings.HasSuffix(p, ".json") || ok || err != nil || n != 0 {
			t.Errorf("%s: reference %v, ok %v, err %v, %d events handed; want reference for a .json, not ok, no error, none", p, ref, ok, err, n)
		}
	}
	var tooLarge *readlimit.TooLargeError
	if _, _, err := EachReferenceEvent(clean, Limits{MaxFileBytes: 100}, func(*schema.Event) {}); !errors.As(err, &tooLarge) || tooLarge.Key != "trace.max_file_bytes" {
		t.Errorf("over trace.max_file_bytes: %v", err)
	}
}
