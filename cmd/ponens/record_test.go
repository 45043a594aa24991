package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordQueryGolden runs `ponens trace symbols` and `ponens trace
// symbol` over the record fixture (examples/record: a reference trace
// with decompositions, conformance checks, verifications, residuals,
// assumptions, a superseded decomposition, one symbol in two files, and a
// checkout where one file changed since the trace) in every form, and
// compares stdout, stderr and the exit code with golden files
// (testdata/record; -update rewrites them).
func TestRecordQueryGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "record"), os.DirFS("../../examples/record")); err != nil {
		t.Fatal(err)
	}
	newer := strings.Replace(readFile(t, "../../examples/record/payments.json"), `"spec_version": "1.13"`, `"spec_version": "2.0"`, 1)
	if err := os.WriteFile(filepath.Join(work, "newer.json"), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	const tr = "record/payments.json"
	for _, c := range []struct {
		name string
		args []string
	}{
		{"index", []string{"trace", "symbols", tr}},
		{"index-cwd", []string{"trace", "symbols", tr, "--cwd", "record/checkout"}},
		{"index-json", []string{"trace", "symbols", tr, "--cwd", "record/checkout", "--json"}},
		{"index-requirements", []string{"trace", "symbols", tr, "--file", "record/requirements.yaml", "--json"}},
		{"detail", []string{"trace", "symbol", tr, "step"}},
		{"detail-json", []string{"trace", "symbol", tr, "step", "--json"}},
		{"detail-out-of-date", []string{"trace", "symbol", tr, "invoice_total", "--cwd", "record/checkout", "--json"}},
		{"detail-edited-later-in-run", []string{"trace", "symbol", tr, "invoice_total", "--json"}},
		{"detail-superseded", []string{"trace", "symbol", tr, "refund", "--json"}},
		{"detail-two-files", []string{"trace", "symbol", tr, "validate"}},
		{"detail-file", []string{"trace", "symbol", tr, "validate", "--file", "forms/b.py", "--json"}},
		{"unknown", []string{"trace", "symbol", tr, "nosuch", "--json"}},
		{"unknown-text", []string{"trace", "symbol", tr, "nosuch"}},
		{"regions", []string{"trace", "symbol", tr, "step", "--regions", "--json"}},
		{"regions-text", []string{"trace", "symbol", tr, "step", "--regions"}},
		{"regions-limit", []string{"trace", "symbol", tr, "step", "--regions", "--limit", "2", "--json"}},
		{"where-substring", []string{"trace", "symbol", tr, "step", "--regions", "--where", "a.c = Capture", "--json"}},
		{"where-outcome", []string{"trace", "symbol", tr, "step", "--regions", "--where", "outcome:Rejected", "--json"}},
		{"where-diverged", []string{"trace", "symbol", tr, "step", "--regions", "--where", "diverged", "--json"}},
		{"where-raised", []string{"trace", "symbol", tr, "step", "--regions", "--where", "raised", "--json"}},
		{"where-empty", []string{"trace", "symbol", tr, "step", "--regions", "--where", " "}},
		{"where-without-regions", []string{"trace", "symbol", tr, "step", "--where", "raised"}},
		{"newer-version", []string{"trace", "symbols", "newer.json"}},
		{"missing", []string{"trace", "symbols", "nope.json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runBinary(t, work, nil, c.args...)
			got := fmt.Sprintf("$ ponens %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(c.args, " "), r.code, r.stdout, strings.ReplaceAll(r.stderr, work, "WORK"))
			golden := filepath.Join("testdata", "record", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := readFile(t, golden); got != want {
				t.Errorf("%s differs from %s:\n%s", c.name, golden, got)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
