package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/monitor"
)

// BenchmarkCheckStream is `ponens check --rules R` on a generated event
// stream (internal/gen.WriteStream) of one run, read as it goes, verdict
// streams and summary.json written: with one rule and with the 20 pure
// rules, at 10k and 100k events. It reports events/s; docs/performance.md
// has the figures.
func BenchmarkCheckStream(b *testing.B) {
	dir := b.TempDir()
	for _, rules := range []string{"testdata/check/rules.yaml", "../../monitor/testdata/pure20.yaml"} {
		rf := ruleFlags{rules: []string{rules}}
		eng, err := loadEngine(&rf, config.RulesConfig{}, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{10000, 100000} {
			p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", n))
			if _, err := os.Stat(p); err != nil {
				f, err := os.Create(p)
				if err != nil {
					b.Fatal(err)
				}
				if err := gen.WriteStream(f, 1, n); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
			b.Run(fmt.Sprintf("rules=%d/events=%d", len(eng.Rules()), n), func(b *testing.B) {
				for b.Loop() {
					checkFile(b, p, eng)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// checkFile is `ponens check` of the trace file at p against eng's rules,
// in-process, summary.json and the verdict files written.
func checkFile(b *testing.B, p string, eng *monitor.Engine) {
	checked, done, err := streamChecks([]string{p}, config.TraceConfig{}, []*monitor.Engine{eng}, io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	if _, err := writeCheck(eng.Rules(), checked, b.TempDir(), filepath.Join(b.TempDir(), "v")); err != nil {
		b.Fatal(err)
	}
}
