package tracefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

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
