package tracefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
