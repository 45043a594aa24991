package monitor_test

import (
	"runtime"
	"testing"

	"github.com/ponens/ponens/internal/loadgen"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
)

// BenchmarkExampleRulesMemory measures what the monitor keeps of a run
// under examples/rules on the load of `ponens bench`: 1,000 open runs, 100
// actions each (bytes/event: the heap growth per event, after a collection).
func BenchmarkExampleRulesMemory(b *testing.B) {
	set, probs := ruleset.Load("../examples/rules")
	if probs != nil {
		b.Fatal(probs)
	}
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	const runs, events = 1000, 100_000
	for b.Loop() {
		g := loadgen.NewGenerator(loadgen.GenConfig{Runs: runs, Seed: 1, Violations: 0.005, RunPrefix: "r"})
		open := make([]*monitor.Run, runs)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range open {
			open[i] = eng.NewRun(g.RunID(i))
			if _, err := open[i].Add(g.Start(i)); err != nil {
				b.Fatal(err)
			}
		}
		for range events {
			i, ev := g.Next()
			if _, err := open[i].Add(ev); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/events, "bytes/event")
		runtime.KeepAlive(open)
	}
}
