package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

// A run stored twice at other stream positions (a batch delivered again
// after the deduplication window) reads as stored once: its verdict
// stream and its summary list each transition once.
func TestReplayedRunReadOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	events := []schema.Event{
		{V: 1, RunID: "replayed", Seq: 1, TS: t0, Type: schema.TypeRunStart, Start: &schema.RunStart{}},
		{V: 1, RunID: "replayed", Seq: 2, TS: t0.Add(time.Second), Type: schema.TypeRunFinish},
	}
	stream := []schema.VerdictEvent{
		{RunID: "replayed", Seq: 1, Rule: schema.RuleRef{ID: "a", Description: "rule a"}, Status: schema.StatusPending, Mode: schema.ModeObserve},
		{RunID: "replayed", Seq: 2, Rule: schema.RuleRef{ID: "a", Description: "rule a"}, Status: schema.StatusViolated, Mode: schema.ModeObserve},
	}
	pos := uint64(1 << 50)
	for range 2 {
		a := chdb.NewStore(engine).Appender()
		if err := sink.AppendRun(a, events, stream, &pos); err != nil {
			t.Fatal(err)
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, table := range []string{"events", "verdicts", "run_rule_status", "runs"} {
			_, _ = engine.Query([]byte(fmt.Sprintf("DELETE FROM %s WHERE run_id = 'replayed'", table)), "")
		}
	})
	ts := newTestServer(t)
	code, body := get(t, ts.URL+"/v1/runs/replayed/verdicts")
	if lines := strings.Count(string(body), "\n"); code != 200 || lines != 2 {
		t.Errorf("verdicts of a run stored twice: %d, %d lines:\n%s", code, lines, body)
	}
}
