package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
)

// envelopeOf decodes a success envelope's data into out.
func envelopeOf(t *testing.T, body []byte, out any) {
	t.Helper()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status != "success" {
		t.Fatalf("not a success envelope (%v): %s", err, body)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("data: %v: %s", err, env.Data)
	}
}

// /v1/fleet over the seeded store: two ended runs of one agent, one of
// them violating rule a once at 10:00.
func TestFleet(t *testing.T) {
	ts := newTestServer(t)
	code, body := get(t, ts.URL+"/v1/fleet?since=2026-12-01T00:00:00Z&until=2026-12-02T00:00:00Z&step=6h")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var f Fleet
	envelopeOf(t, body, &f)
	if f.Runs != (FleetRuns{Total: 2, Ended: 2, Violated: 1}) {
		t.Errorf("runs %+v, want 2 ended, 1 violated", f.Runs)
	}
	if len(f.TopRules) != 1 || f.TopRules[0].RuleID != "a" || f.TopRules[0].Violations != 1 || f.TopRules[0].Runs != 1 ||
		len(f.TopRules[0].Points) != 1 || f.TopRules[0].Points[0].T != "2026-12-01T06:00:00Z" {
		t.Errorf("topRules %+v, want rule a once, in the 06:00 bucket of 6h", f.TopRules)
	}
	if len(f.ViolationsOverTime) != 1 || f.ViolationsOverTime[0] != (Point{T: "2026-12-01T06:00:00Z", Violations: 1, Runs: 1}) {
		t.Errorf("violationsOverTime %+v", f.ViolationsOverTime)
	}
	if len(f.Agents) != 1 || f.Agents[0] != (AgentCompliance{Agent: "coder-1", Runs: 2, Violating: 1, Compliance: 0.5}) {
		t.Errorf("agents %+v", f.Agents)
	}
	// A window after the runs: nothing, as empty lists.
	_, body = get(t, ts.URL+"/v1/fleet?since=2026-12-02T00:00:00Z&until=2026-12-03T00:00:00Z")
	envelopeOf(t, body, &f)
	if f.Runs.Total != 0 || len(f.TopRules) != 0 || len(f.Agents) != 0 || !strings.Contains(string(body), `"agents":[]`) {
		t.Errorf("an empty window: %s", body)
	}
	if code, body := get(t, ts.URL+"/v1/fleet?step=90m"); code != 400 || !strings.Contains(string(body), "whole number of hours") {
		t.Errorf("step=90m: %d %s", code, body)
	}
}

// /v1/deadletters lists the stored rows newest first, filtered by reason
// and source, a page at a time.
func TestDeadLetters(t *testing.T) {
	if _, err := engine.Query([]byte(`INSERT INTO dead_letters (stream_seq, ts, subject, reason, source, error, body, truncated) VALUES
 (1, '2026-12-01 10:00:00.000', 'ponens.events.x', 'invalid', 'gateway', 'seq: expected a number', '{"v":1,"seq":"x"}', 0),
 (2, '2026-12-01 10:05:00.000', 'ponens.events.y', 'duplicate_key', 'worker', 'key "a" twice', '{"a":1,"a":2}', 0),
 (3, '2026-12-01 10:10:00.000', 'ponens.alerts.a', 'delivery', 'alert', 'webhook: 503', '{"rule":"a"}', 12)`), "CSV"); err != nil {
		t.Fatal(err)
	}
	defer engine.Query([]byte("TRUNCATE TABLE dead_letters"), "CSV")
	ts := newTestServer(t)
	var page DeadLetterPage
	_, body := get(t, ts.URL+"/v1/deadletters?limit=2")
	envelopeOf(t, body, &page)
	if len(page.DeadLetters) != 2 || page.DeadLetters[0].StreamSeq != 3 || page.DeadLetters[1].StreamSeq != 2 || page.NextBefore != 2 {
		t.Fatalf("page 1: %s", body)
	}
	if d := page.DeadLetters[0]; d != (DeadLetter{StreamSeq: 3, TS: "2026-12-01T10:10:00Z", Subject: "ponens.alerts.a", Reason: "delivery", Source: "alert", Error: "webhook: 503", Body: `{"rule":"a"}`, Truncated: 12}) {
		t.Errorf("row 3: %+v", d)
	}
	_, body = get(t, ts.URL+"/v1/deadletters?limit=2&before=2")
	envelopeOf(t, body, &page)
	if len(page.DeadLetters) != 1 || page.DeadLetters[0].StreamSeq != 1 || page.NextBefore != 0 {
		t.Fatalf("page 2: %s", body)
	}
	for q, want := range map[string]uint64{"reason=duplicate_key": 2, "source=gateway": 1, "since=2026-12-01T10:08:00Z": 3} {
		v, _ := url.ParseQuery(q)
		_, body = get(t, ts.URL+"/v1/deadletters?"+v.Encode())
		envelopeOf(t, body, &page)
		if len(page.DeadLetters) != 1 || page.DeadLetters[0].StreamSeq != want {
			t.Errorf("%s: %s, want only %d", q, body, want)
		}
	}
}

// Two rules violated on the same event of one run: the bucket sums the
// rules' violations (2) and counts the run once.
func TestFleetBucketSumsRules(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	events := []schema.Event{
		{V: 1, RunID: "two-rules", Seq: 1, TS: t0, Type: schema.TypeRunStart, Start: &schema.RunStart{Agent: "coder-9"}},
		{V: 1, RunID: "two-rules", Seq: 2, TS: t0.Add(time.Second), Type: schema.TypeRunFinish},
	}
	stream := []schema.VerdictEvent{
		{RunID: "two-rules", Seq: 2, Rule: schema.RuleRef{ID: "x"}, Status: schema.StatusViolated, Mode: schema.ModeObserve},
		{RunID: "two-rules", Seq: 2, Rule: schema.RuleRef{ID: "y"}, Status: schema.StatusViolated, Mode: schema.ModeObserve},
	}
	pos := uint64(1 << 51)
	storeRun(t, events, stream, &pos)
	t.Cleanup(func() {
		for _, table := range []string{"events", "verdicts", "run_rule_status", "runs", "violations_rule_hour", "compliance_agent_day"} {
			_, _ = engine.Query([]byte(fmt.Sprintf("DELETE FROM %s WHERE run_id = 'two-rules'", table)), "")
		}
		_, _ = engine.Query([]byte("DELETE FROM violations_rule_hour WHERE hour < '2025-01-01'"), "")
	})
	ts := newTestServer(t)
	code, body := get(t, ts.URL+"/v1/fleet?since=2024-01-01T00:00:00Z&until=2024-01-02T00:00:00Z&step=24h")
	var env struct {
		Data Fleet `json:"data"`
	}
	if err := json.Unmarshal(body, &env); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if got := env.Data.ViolationsOverTime; len(got) != 1 || got[0].Violations != 2 || got[0].Runs != 1 {
		t.Errorf("violationsOverTime %+v, want one bucket of 2 violations on 1 run", got)
	}
}
