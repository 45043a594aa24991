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
		storeRun(t, events, stream, &pos)
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
	code, body = get(t, ts.URL+"/v1/runs/replayed/timeline")
	if n := strings.Count(string(body), `"type":"run.`); code != 200 || n != 2 {
		t.Errorf("timeline of a run stored twice: %d, %d events:\n%s", code, n, body)
	}
	code, body = get(t, ts.URL+"/v1/summary?run=replayed")
	if code != 200 || !strings.Contains(string(body), `"events": 2,`) {
		t.Errorf("summary of a run stored twice: %d\n%s", code, body)
	}
}

// storeRun commits a run's events and verdict stream into the test engine
// at stream positions from *pos on.
func storeRun(t *testing.T, events []schema.Event, stream []schema.VerdictEvent, pos *uint64) {
	t.Helper()
	a := chdb.NewStore(engine).Appender()
	if err := sink.AppendRun(a, events, stream, pos); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A selection by a rule neither the manifest nor a stored verdict names is
// not_found on every route that takes one, as the summary's is: not an
// answer in which the rule holds everywhere.
func TestUnknownRuleRefused(t *testing.T) {
	ts := newTestServer(t)
	for _, path := range []string{"/v1/rules/nope/stats", "/v1/runs?rule=nope", "/v1/summary?rule=nope", "/v1/export?what=verdicts&rule=nope", "/v1/runs?rule=a&rule=nope"} {
		code, body := get(t, ts.URL+path)
		if code != 404 || !strings.Contains(string(body), `rule \"nope\": neither the rule manifest nor a stored verdict names it`) {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := get(t, ts.URL+"/v1/runs?rule=a"); code != 200 {
		t.Errorf("GET /v1/runs?rule=a: %d %s", code, body)
	}
}
