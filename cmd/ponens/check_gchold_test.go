package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/monitor"
)

// collector reads the GC percentage and the soft memory limit without
// changing them.
func collector() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestCheckHoldsTheCollectorUntilDone: a reference trace read whole keeps
// the collector off until the check's outputs are written (done), and a
// check that fails on a later file ends the hold too.
func TestCheckHoldsTheCollectorUntilDone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(140))
	_, limit := collector()
	rf := ruleFlags{rules: []string{"testdata/check/rules.yaml"}}
	eng, err := loadEngine(&rf, config.RulesConfig{}, false)
	if err != nil {
		t.Fatal(err)
	}
	clean := "../../schema/testdata/reference/deploy_aborted.json"
	checked, done, err := streamChecks([]string{clean}, config.TraceConfig{}, []*monitor.Engine{eng}, io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := collector(); p != -1 {
		t.Fatalf("GC percent after reading %s: %d, want -1 (held until done)", clean, p)
	}
	if _, err := writeCheck(eng.Rules(), checked, t.TempDir(), filepath.Join(t.TempDir(), "v")); err != nil {
		t.Fatal(err)
	}
	done()
	if p, l := collector(); p != 140 || l != limit {
		t.Fatalf("after done: GC percent %d, memory limit %d; want 140 and %d", p, l, limit)
	}

	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := streamChecks([]string{clean, empty}, config.TraceConfig{}, []*monitor.Engine{eng}, io.Discard, newProgress(io.Discard, 2, progressMin, "", "")); err == nil {
		t.Fatalf("a check with an empty file: no error")
	}
	if p, l := collector(); p != 140 || l != limit {
		t.Fatalf("after a failed check: GC percent %d, memory limit %d; want 140 and %d", p, l, limit)
	}
}

// TestReadTracesReleases: the commands that read trace files whole keep
// the collector off until they call release.
func TestReadTracesReleases(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(140))
	_, limit := collector()
	runs, release, err := readTraces([]string{"../../schema/testdata/reference/deploy_aborted.json", "../../examples/traces/fleet.jsonl"}, config.TraceConfig{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		t.Fatal("no runs")
	}
	if p, _ := collector(); p != -1 {
		t.Fatalf("GC percent after readTraces: %d, want -1 (held until release)", p)
	}
	release()
	if p, l := collector(); p != 140 || l != limit {
		t.Fatalf("after release: GC percent %d, memory limit %d; want 140 and %d", p, l, limit)
	}
	if _, _, err := readTraces([]string{"../../schema/testdata/reference/deploy_aborted.json", "no-such-file.json"}, config.TraceConfig{}, io.Discard); err == nil {
		t.Fatal("readTraces of a missing file: no error")
	}
	if p, l := collector(); p != 140 || l != limit {
		t.Fatalf("after a failed readTraces: GC percent %d, memory limit %d; want 140 and %d", p, l, limit)
	}
}
