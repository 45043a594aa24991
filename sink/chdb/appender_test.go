package chdb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
)

func verdictsOf(run string, n int) []schema.VerdictEvent {
	var vs []schema.VerdictEvent
	for i := 0; i < n; i++ {
		st := schema.StatusPending
		if i == n-1 {
			st = schema.StatusViolated
		}
		vs = append(vs, schema.VerdictEvent{RunID: run, Seq: uint64(i + 1), Rule: schema.RuleRef{ID: "ap-rule", Description: "d"}, Status: st, Mode: schema.ModeObserve})
	}
	return vs
}

func commitVerdicts(t *testing.T, s *Store, vs []schema.VerdictEvent, firstSeq uint64) {
	t.Helper()
	a := s.Appender()
	for i := range vs {
		if err := a.AppendVerdict(&vs[i], schema.StreamMeta{Seq: firstSeq + uint64(i), Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The same batch committed twice is stored once, without FINAL: the insert
// carries a deduplication token.
func TestAppenderReplayDeduplicated(t *testing.T) {
	s := NewStore(engine)
	vs := verdictsOf("ap-1", 5)
	commitVerdicts(t, s, vs, 1000)
	commitVerdicts(t, s, vs, 1000)
	if got := query(t, "SELECT count() FROM verdicts WHERE run_id = 'ap-1'"); got != "5" {
		t.Errorf("rows: %s, want 5", got)
	}
	if got := query(t, "SELECT status, leaning, mode, rule_description FROM verdicts WHERE run_id = 'ap-1' AND seq = 5"); got != "violated\t\tobserve\td" {
		t.Errorf("row: %q", got)
	}
}

// Other records at the same stream positions (a stream made anew, two
// checks of other traces) are another batch: the token tells them apart.
func TestAppenderSamePositionsOtherRecords(t *testing.T) {
	s := NewStore(engine)
	commitVerdicts(t, s, verdictsOf("ap-pos-1", 4), 3000)
	commitVerdicts(t, s, verdictsOf("ap-pos-2", 4), 3000)
	if got := query(t, "SELECT count() FROM verdicts WHERE run_id LIKE 'ap-pos-%'"); got != "8" {
		t.Errorf("rows: %s, want 8", got)
	}
}

// A batch of several megabytes is stored whole: its bytes do not follow
// the statement's text, which the engine reads only so far
// (max_query_size).
func TestAppenderLargeBatch(t *testing.T) {
	s := NewStore(engine)
	vs := verdictsOf("ap-large", 20000)
	for i := range vs {
		vs[i].Rule.Description = strings.Repeat("a long description, line\n", 8)
	}
	commitVerdicts(t, s, vs, 4000)
	if got := query(t, "SELECT count(), uniqExact(seq), min(length(rule_description)) FROM verdicts WHERE run_id = 'ap-large'"); got != "20000\t20000\t200" {
		t.Errorf("rows, seqs, description length: %q, want 20000, 20000, 200", got)
	}
}

// A replay cut into other batches is not caught by the token; FINAL and the
// views still count each verdict once.
func TestAppenderReplayRecut(t *testing.T) {
	s := NewStore(engine)
	vs := verdictsOf("ap-2", 6)
	commitVerdicts(t, s, vs, 2000)
	commitVerdicts(t, s, vs[:3], 2000)
	commitVerdicts(t, s, vs[3:], 2003)
	if got := query(t, "SELECT count() FROM verdicts FINAL WHERE run_id = 'ap-2'"); got != "6" {
		t.Errorf("rows FINAL: %s, want 6", got)
	}
	if got := query(t, "SELECT status FROM run_rule_status FINAL WHERE run_id = 'ap-2'"); got != "violated" {
		t.Errorf("run_rule_status: %q", got)
	}
	if got := query(t, "SELECT uniqExactMerge(violations) FROM violations_rule_hour WHERE rule_id = 'ap-rule'"); got == "" || got == "0" {
		t.Errorf("violations_rule_hour: %q", got)
	}
}

func TestAppenderEventsAndRollback(t *testing.T) {
	s := NewStore(engine)
	a := s.Appender()
	now := time.Now().UTC()
	evs := []schema.Event{
		{V: 1, RunID: "ap-ev", Seq: 1, TS: now, Type: schema.TypeRunStart, Start: &schema.RunStart{Agent: "bot-x"}},
		{V: 1, RunID: "ap-ev", Seq: 2, TS: now, Type: schema.TypeAction, Action: &schema.Action{ID: 1, Type: "Edit", Capability: "fs.write",
			Evidence: []schema.Evidence{{Type: "FileRef", Ref: "src/a.go"}}}},
	}
	for i := range evs {
		if err := a.AppendEvent(&evs[i], []byte(fmt.Sprintf(`{"seq":%d}`, i+1)), schema.StreamMeta{Seq: uint64(3000 + i), Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, "SELECT count() FROM events WHERE run_id = 'ap-ev'"); got != "0" {
		t.Fatalf("rolled back events were written: %s", got)
	}
	for i := range evs {
		a.AppendEvent(&evs[i], []byte(fmt.Sprintf(`{"seq":%d}`, i+1)), schema.StreamMeta{Seq: uint64(3000 + i), Time: now})
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, "SELECT seq, type, agent, action_type, target, capability, body FROM events WHERE run_id = 'ap-ev' ORDER BY seq"); got != "1\trun.start\tbot-x\t\t\t\t{\"seq\":1}\n2\taction\t\tEdit\tsrc/a.go\tfs.write\t{\"seq\":2}" {
		t.Errorf("events: %q", got)
	}
	if got := query(t, "SELECT agent FROM open_runs WHERE run_id = 'ap-ev'"); got != "bot-x" {
		t.Errorf("open_runs: %q", got)
	}
}
