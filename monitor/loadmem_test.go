package monitor_test

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/ponens/ponens/internal/loadgen"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
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

// BenchmarkManyRunsMemory measures what the monitor keeps per open run
// when runs are many and short, as in `ponens bench --runs 100000`: 100,000
// runs under examples/rules, each with its run.start and two actions, every
// event decoded from its JSON and added as a worker adds it (AddEncoded) (bytes/run: the heap
// growth per run, after a collection).
func BenchmarkManyRunsMemory(b *testing.B) {
	set, probs := ruleset.Load("../examples/rules")
	if probs != nil {
		b.Fatal(probs)
	}
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	const runs, actions = 100_000, 2
	g := loadgen.NewGenerator(loadgen.GenConfig{Runs: runs, Seed: 1, Violations: 0.005, RunPrefix: "bench-r"})
	var raw [][]byte
	encode := func(ev *schema.Event) {
		data, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		raw = append(raw, data)
	}
	for i := range runs {
		encode(g.Start(i))
	}
	for range runs * actions {
		_, ev := g.Next()
		encode(ev)
	}
	for b.Loop() {
		open := make(map[string]*monitor.Run, runs)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, data := range raw {
			ev, err := schema.DecodeEvent("event", data)
			if err != nil {
				b.Fatal(err)
			}
			r := open[ev.RunID]
			if r == nil {
				r = eng.NewRun(ev.RunID)
				open[ev.RunID] = r
			}
			if _, err := r.AddEncoded(&ev, bytes.Clone(data)); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/runs, "bytes/run")
		runtime.KeepAlive(open)
	}
}
