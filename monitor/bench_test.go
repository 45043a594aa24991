package monitor

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// benchEngine loads a rules file into an engine.
func benchEngine(b *testing.B, file string) *Engine {
	set, probs := ruleset.Load(file)
	if probs != nil {
		b.Fatal(probs)
	}
	eng, errs := NewEngine(set)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return eng
}

// benchEvents makes n action events of a run: a mix of the types the rules
// mention, on `targets` distinct files, half of them high-stakes.
func benchEvents(runID string, n, targets int, seed uint64) []schema.Event {
	r := rand.New(rand.NewPCG(seed, 1))
	types := []string{"ReadFile", "EditFile", "RunTests", "GitCommit", "SearchCode", "Verify", "Formalize", "ToolCall", "Deploy", "DeleteFile"}
	statuses := []string{"completed", "completed", "completed", "failed"}
	cats := []string{"activity", "activity", "gateway", "reasoning"}
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := make([]schema.Event, 0, n+1)
	events = append(events, schema.Event{V: 1, RunID: runID, Seq: 1, TS: ts, Type: schema.TypeRunStart,
		Start: &schema.RunStart{HighStakesPaths: []string{"payments/"}}})
	for i := range n {
		dir := "src/"
		if i%2 == 0 {
			dir = "payments/"
		}
		a := &schema.Action{ID: int64(i + 1), Type: types[r.IntN(len(types))], Status: statuses[r.IntN(4)],
			Category: cats[r.IntN(4)], Evidence: []schema.Evidence{{Type: "FileRef", Ref: fmt.Sprintf("%sf%d.py", dir, r.IntN(targets))}}}
		if r.IntN(2) == 0 {
			a.Rationale = "why"
		}
		events = append(events, schema.Event{V: 1, RunID: runID, Seq: uint64(i + 2), TS: ts, Type: schema.TypeAction, Action: a})
	}
	return events
}

// BenchmarkPure20 measures the monitor alone on the twenty pure-temporal
// rules of testdata/pure20.yaml, at two run lengths: the cost per event must
// not grow with the length of the run. The events cycle through a pool of
// 1,000 (renumbered as they go), so that a million-event run does not also
// measure the garbage collector walking a million-event input.
func BenchmarkPure20(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			eng := benchEngine(b, "testdata/pure20.yaml")
			pool := benchEvents("bench", 1_000, 50, 1)
			b.ReportAllocs()
			for b.Loop() {
				run := eng.NewRun("bench")
				if _, err := run.Add(&pool[0]); err != nil { // run.start
					b.Fatal(err)
				}
				for i := 1; i <= n; i++ {
					ev := &pool[1+(i-1)%(len(pool)-1)]
					ev.Seq, ev.Action.ID = uint64(i+1), int64(i)
					if _, err := run.Add(ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/event")
			b.ReportMetric(float64(b.N*(n+1))/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkPure20Stream is BenchmarkPure20 on the events `ponens check`
// reads in its benchmarks: one run of 100,000 events from
// gen.WriteStream, decoded beforehand, each fed once (none reused, so the
// leaves see the stream's variety and the events are not in cache).
func BenchmarkPure20Stream(b *testing.B) {
	eng := benchEngine(b, "testdata/pure20.yaml")
	var buf bytes.Buffer
	if err := gen.WriteStream(&buf, 1, 100_000); err != nil {
		b.Fatal(err)
	}
	var evs []schema.Event
	if err := schema.ScanJSONL("stream.jsonl", &buf, 0, func(ev *schema.Event) { evs = append(evs, *ev) }); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		run := eng.NewRun(evs[0].RunID)
		for i := range evs {
			if _, err := run.Add(&evs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/event")
}

// lineageEvents makes n actions that produce and consume artifacts: every
// action produces one artifact derived from an earlier one and consumes one,
// on `targets` distinct files.
func lineageEvents(runID string, n, targets int, seed uint64) []schema.Event {
	events := benchEvents(runID, n, targets, seed)
	r := rand.New(rand.NewPCG(seed, 2))
	types := []string{"IMLModel", "VerificationResult", "SourceCode"}
	for i := 1; i < len(events); i++ {
		a := events[i].Action
		id := fmt.Sprintf("art%d", a.ID)
		producer := a.ID
		art := schema.Artifact{ID: id, Type: types[r.IntN(3)], Name: fmt.Sprintf("m%d", r.IntN(targets)), ProducerActionID: &producer}
		if a.ID > 1 {
			parent := fmt.Sprintf("art%d", 1+r.Int64N(a.ID-1))
			art.DerivedFrom = []string{parent}
			a.Inputs = []string{parent}
		}
		a.Outputs = []string{id}
		a.Artifacts = []schema.Artifact{art}
	}
	return events
}

// benchRuns runs one monitor over each run length of lineage events with
// the rules of file, reporting the cost per event.
func benchRuns(b *testing.B, file string, lengths []int, name string, seed uint64) {
	for _, n := range lengths {
		b.Run(fmt.Sprintf(name, n), func(b *testing.B) {
			eng := benchEngine(b, file)
			events := lineageEvents("bench", n, 50, seed)
			b.ReportAllocs()
			for b.Loop() {
				run := eng.NewRun("bench")
				for i := range events {
					if _, err := run.Add(&events[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
		})
	}
}

// BenchmarkScoped measures the five scoped rules of testdata/scoped.yaml on
// runs whose actions touch 50 distinct targets and build a lineage.
func BenchmarkScoped(b *testing.B) {
	benchRuns(b, "testdata/scoped.yaml", []int{1_000, 100_000}, "events=%d/targets=50", 3)
}

// BenchmarkStructural measures the structural rules of
// testdata/structural.yaml. Their leaves read collections; the output index
// and running counts keep the cost per event flat as the run grows.
func BenchmarkStructural(b *testing.B) {
	benchRuns(b, "testdata/structural.yaml", []int{100, 1_000, 5_000}, "events=%d", 4)
}

// BenchmarkRunMemory measures the heap held per open run for the
// twenty-rule set after 20 events each.
func BenchmarkRunMemory(b *testing.B) {
	eng := benchEngine(b, "testdata/pure20.yaml")
	const runs = 10_000
	events := benchEvents("mem", 20, 5, 2)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		open := make([]*Run, runs)
		for i := range open {
			open[i] = eng.NewRun("mem")
			for j := range events {
				if _, err := open[i].Add(&events[j]); err != nil {
					b.Fatal(err)
				}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/runs, "bytes/run")
		runtime.KeepAlive(open)
	}
}

// deepLineageEvents makes n actions along one chain: action i consumes the
// artifact action i-1 produced and produces one derived from it, so the
// lineage of the last action is n artifacts deep, over `targets` distinct
// files and artifact names.
func deepLineageEvents(runID string, n, targets int, seed uint64) []schema.Event {
	events := benchEvents(runID, n, targets, seed)
	for i := 1; i < len(events); i++ {
		a := events[i].Action
		id := fmt.Sprintf("art%d", a.ID)
		producer := a.ID
		art := schema.Artifact{ID: id, Type: "SourceCode", Name: fmt.Sprintf("m%d", int(a.ID)%targets), ProducerActionID: &producer}
		if a.ID > 1 {
			parent := fmt.Sprintf("art%d", a.ID-1)
			art.DerivedFrom = []string{parent}
			a.Inputs = []string{parent}
		}
		a.Outputs = []string{id}
		a.Artifacts = []schema.Artifact{art}
	}
	return events
}

// BenchmarkTargetDeepLineage measures P_target and H_target on one chain of
// lineage as deep as the run (every action derives from the one before):
// a position's target set spans its whole lineage, built once per artifact
// from its parent's set, so the cost per event stays flat from 1,000 to
// 100,000 actions as long as the number of distinct targets does.
func BenchmarkTargetDeepLineage(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d/targets=50", n), func(b *testing.B) {
			eng := benchEngine(b, "testdata/target.yaml")
			events := deepLineageEvents("bench", n, 50, 5)
			b.ReportAllocs()
			for b.Loop() {
				run := eng.NewRun("bench")
				for i := range events {
					if _, err := run.Add(&events[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
		})
	}
}
