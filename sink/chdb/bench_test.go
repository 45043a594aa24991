package chdb

import (
	"fmt"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
)

// benchSeq is the next stream position the benchmarks use, so that no
// batch repeats another's (and is dropped as a replay).
var benchSeq uint64 = 1 << 40

// BenchmarkStoreVerdicts writes verdicts into the embedded engine in Arrow
// batches of each size, as the sink does: append every verdict to an
// Appender (building the record batch), then Commit (one ArrowStream
// insert, and the run_rule_status and violations_rule_hour views it
// feeds). rows/s counts verdicts committed per second of the whole.
func BenchmarkStoreVerdicts(b *testing.B) {
	for _, size := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s := NewStore(engine)
			rules := []string{"tests_before_commit", "no-env-writes", "research_before_edit", "reasoning_required", "deploy_gate"}
			vs := make([]schema.VerdictEvent, size)
			at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			for i := range vs {
				vs[i] = schema.VerdictEvent{RunID: fmt.Sprintf("bench-run-%d", i/40), Seq: uint64(i%40 + 1), Rule: schema.RuleRef{ID: rules[i%len(rules)], Description: "a rule"},
					Status: schema.StatusPending, Mode: schema.ModeObserve}
				if i%50 == 0 { // one in fifty a violation, with its cause
					vs[i].Status = schema.StatusViolated
					vs[i].Cause = &schema.Cause{Subformula: "P(RunTests ∧ completed)", Event: schema.Event{V: 1, RunID: vs[i].RunID, Seq: vs[i].Seq, TS: at, Type: schema.TypeAction,
						Action: &schema.Action{ID: 1, Type: "GitCommit", Status: "completed"}}}
				}
			}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				a := s.Appender()
				for i := range vs {
					benchSeq++
					if err := a.AppendVerdict(&vs[i], schema.StreamMeta{Seq: benchSeq, Time: at}); err != nil {
						b.Fatal(err)
					}
				}
				if err := a.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkInsertArrow is the engine's part alone: one prebuilt record
// batch of 50,000 verdicts inserted (each time at other stream positions,
// so no insert is dropped as a repeat).
func BenchmarkInsertArrow(b *testing.B) {
	vb := schema.NewVerdictBatch(nil)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const size = 50_000
	for i := range size {
		v := schema.VerdictEvent{RunID: fmt.Sprintf("ins-run-%d", i/40), Seq: uint64(i%40 + 1), Rule: schema.RuleRef{ID: "r"}, Status: schema.StatusPending, Mode: schema.ModeObserve}
		if err := vb.Append(&v, schema.StreamMeta{Seq: uint64(i + 1), Time: at}); err != nil {
			b.Fatal(err)
		}
	}
	rec := vb.Record()
	defer rec.Release()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		var key sink.BatchKey // a token of its own for each insert
		key.Add(uint64(i+1), 0)
		key.Add(uint64(i+size), 0)
		if err := insertArrow(engine, "verdicts", rec, key.Token("verdicts")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "rows/s")
}
