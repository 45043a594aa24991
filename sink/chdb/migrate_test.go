package chdb

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
)

func query(t *testing.T, sql string) string {
	t.Helper()
	out, err := engine.Query([]byte(sql), "TabSeparated")
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.TrimSpace(string(out))
}

func TestMigrateOnce(t *testing.T) {
	applied, err := Migrate(engine)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Fatalf("a second Migrate applied %v", applied)
	}
	ms, _ := schema.Migrations()
	if got := query(t, "SELECT count() FROM schema_migrations FINAL"); got != strconv.Itoa(len(ms)) {
		t.Fatalf("recorded %s migrations, want %d", got, len(ms))
	}
	for _, tbl := range []string{"events", "verdicts", "run_rule_status", "runs", "rule_versions", "dead_letters", "record_entries",
		"violations_rule_hour", "compliance_agent_day", "open_runs"} {
		if got := query(t, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = '"+tbl+"'"); got != "1" {
			t.Errorf("table %s: %s", tbl, got)
		}
	}
}

// A replayed insert of the same verdicts changes no count the views give.
func TestReplayedVerdictsCountOnce(t *testing.T) {
	const rows = `('mr-1', 'r1', 3, '2026-01-01 10:05:00', 'pending', 'violate', 'observe', '', '', '', '', 10),
		('mr-1', 'r1', 5, '2026-01-01 10:06:00', 'violated', '', 'observe', '', '', 'F x', '{}', 11),
		('mr-2', 'r1', 2, '2026-01-01 10:07:00', 'violated', '', 'observe', '', '', 'F x', '{}', 12)`
	for i := 0; i < 2; i++ {
		if err := engine.Exec("INSERT INTO verdicts VALUES " + rows); err != nil {
			t.Fatal(err)
		}
	}
	if got := query(t, "SELECT count() FROM verdicts FINAL WHERE run_id LIKE 'mr-%'"); got != "3" {
		t.Errorf("verdicts FINAL: %s, want 3", got)
	}
	if got := query(t, "SELECT run_id, status FROM run_rule_status FINAL WHERE run_id LIKE 'mr-%' ORDER BY run_id"); got != "mr-1\tviolated\nmr-2\tviolated" {
		t.Errorf("run_rule_status: %q", got)
	}
	if got := query(t, "SELECT uniqExactMerge(violations), uniqExactMerge(runs) FROM violations_rule_hour WHERE rule_id = 'r1' AND hour = '2026-01-01 10:00:00'"); got != "2\t2" {
		t.Errorf("violations_rule_hour: %q, want 2 violations in 2 runs", got)
	}
}

func TestRunsFromEvents(t *testing.T) {
	const rows = `('er-1', 1, now64(3) - 60, 'run.start', 'bot-a', '', '', '', '{}', 1),
		('er-1', 2, now64(3) - 30, 'action', '', 'Edit', 'a.go', 'fs.write', '{}', 2),
		('er-2', 1, now64(3) - 60, 'run.start', 'bot-b', '', '', '', '{}', 3),
		('er-2', 2, now64(3), 'run.finish', '', '', '', '', '{}', 4)`
	for i := 0; i < 2; i++ {
		if err := engine.Exec("INSERT INTO events (run_id, seq, ts, type, agent, action_type, target, capability, body, stream_seq) VALUES " + rows); err != nil {
			t.Fatal(err)
		}
	}
	if got := query(t, "SELECT run_id, agent, last_seq FROM open_runs WHERE run_id LIKE 'er-%'"); got != "er-1\tbot-a\t2" {
		t.Errorf("open_runs: %q", got)
	}
	if got := query(t, "SELECT run_id, max(outcome), max(last_seq) FROM runs WHERE run_id = 'er-2' GROUP BY run_id"); got != "er-2\trun.finish\t2" {
		t.Errorf("runs: %q", got)
	}
	if got := query(t, "SELECT count() FROM events FINAL WHERE run_id LIKE 'er-%'"); got != "4" {
		t.Errorf("events FINAL: %s", got)
	}
}
