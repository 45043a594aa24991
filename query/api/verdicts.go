package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/ponens/ponens/query/record/stored"
	"github.com/ponens/ponens/schema"
)

// verdictRow is a stored verdict transition.
type verdictRow struct {
	RunID       string `json:"run_id"`
	RuleID      string `json:"rule_id"`
	Seq         uint64 `json:"seq"`
	Status      string `json:"status"`
	Leaning     string `json:"leaning"`
	Mode        string `json:"mode"`
	Description string `json:"rule_description"`
	Subformula  string `json:"cause_subformula"`
	Event       string `json:"cause_event"`
	StreamSeq   uint64 `json:"stream_seq"`
}

// verdictColumns are the columns of a verdictRow.
const verdictColumns = "run_id, toString(rule_id) AS rule_id, seq, toString(status) AS status, toString(leaning) AS leaning, toString(mode) AS mode, toString(rule_description) AS rule_description, cause_subformula, cause_event, stream_seq"

func (r verdictRow) verdict() (schema.VerdictEvent, error) {
	v := schema.VerdictEvent{RunID: r.RunID, Seq: r.Seq, Rule: schema.RuleRef{ID: r.RuleID, Description: r.Description},
		Status: schema.VerdictStatus(r.Status), Leaning: schema.Leaning(r.Leaning), Mode: schema.Mode(r.Mode)}
	if r.Event != "" || r.Subformula != "" {
		v.Cause = &schema.Cause{Subformula: r.Subformula}
		if r.Event != "" {
			if err := json.Unmarshal([]byte(r.Event), &v.Cause.Event); err != nil {
				return v, fmt.Errorf("stored verdict %s/%s/%d: its cause event: %w", r.RunID, r.RuleID, r.Seq, err)
			}
		}
	}
	return v, nil
}

// runVerdicts are a run's verdict transitions about rules (every rule
// when empty), in the order they were emitted: by their position on the
// verdict stream.
//
// A verdict stored twice (a batch delivered again) is read once: of the
// rows of one (rule, seq) the one at the latest stream position, as FINAL
// would keep it. LIMIT 1 BY does it over the run's rows alone, where FINAL
// on a table ordered by rule first costs several times as much over a
// large store.
func (s *Server) runVerdicts(ctx context.Context, run string, rules []string) ([]schema.VerdictEvent, error) {
	st := newStmt("SELECT * FROM (SELECT " + verdictColumns + " FROM verdicts WHERE run_id = ")
	st.sql(st.str(run))
	if len(rules) > 0 {
		st.sql(" AND rule_id " + st.in(rules))
	}
	st.sql(" ORDER BY rule_id, seq, stream_seq DESC LIMIT 1 BY rule_id, seq) ORDER BY stream_seq, seq, rule_id")
	rs, err := rows[verdictRow](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	out := make([]schema.VerdictEvent, 0, len(rs))
	for _, r := range rs {
		v, err := r.verdict()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// VerdictsJSONL is a run's verdict stream as `ponens check` writes a
// verdicts.jsonl file: one verdict per line, in emission order.
func (s *Server) VerdictsJSONL(ctx context.Context, run string) ([]byte, error) {
	if err := s.runExists(ctx, run); err != nil {
		return nil, err
	}
	vs, err := s.runVerdicts(ctx, run, nil)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i := range vs {
		line, err := json.Marshal(&vs[i])
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// runExists is nil when the store holds an event of run, else not_found.
func (s *Server) runExists(ctx context.Context, run string) error {
	st := newStmt("SELECT count() AS n FROM events WHERE run_id = ")
	st.sql(st.str(run))
	n, err := rows[struct {
		N uint64 `json:"n"`
	}](ctx, s.store, st)
	if err != nil {
		return storeError(err)
	}
	if len(n) == 0 || n[0].N == 0 {
		return notFound("run %s: the store has no event of it", safe(run))
	}
	return nil
}

// TimelineEvent is one event of a run's timeline.
type TimelineEvent struct {
	Seq        uint64 `json:"seq"`
	TS         string `json:"ts"`
	Type       string `json:"type"`
	ActionType string `json:"actionType"`
	Target     string `json:"target"`
	Capability string `json:"capability"`
	Label      string `json:"label"`
}

// Timeline is a run's events and the verdict transitions on them (each
// verdict's seq is the seq of the event that made it).
type Timeline struct {
	Events   []TimelineEvent       `json:"events"`
	Verdicts []schema.VerdictEvent `json:"verdicts"`
}

// Timeline returns run's timeline.
func (s *Server) Timeline(ctx context.Context, run string) (*Timeline, error) {
	st := newStmt(`SELECT seq, toUnixTimestamp64Milli(ts) AS ms, toString(type) AS type, toString(action_type) AS actionType,
  target, toString(capability) AS capability, JSONExtractString(body, 'action', 'label') AS label
FROM events WHERE run_id = `)
	st.sql(st.str(run) + " ORDER BY seq, stream_seq DESC LIMIT 1 BY seq") // the latest copy of each event, as FINAL keeps, over the run's rows only
	type row struct {
		TimelineEvent
		MS int64 `json:"ms"`
	}
	evs, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	if len(evs) == 0 {
		return nil, notFound("run %s: the store has no event of it", safe(run))
	}
	vs, err := s.runVerdicts(ctx, run, nil)
	if err != nil {
		return nil, err
	}
	t := &Timeline{Events: make([]TimelineEvent, len(evs)), Verdicts: vs}
	for i, e := range evs {
		e.TimelineEvent.TS = timeText(msTime(e.MS))
		t.Events[i] = e.TimelineEvent
	}
	return t, nil
}

// runEvents are a run's stored events in seq order, decoded from the JSON
// the sink kept.
func (s *Server) runEvents(ctx context.Context, run string) ([]schema.Event, error) {
	evs, err := stored.Events(ctx, s.store, run)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %v", errDeadline, err)
		}
		return nil, storeError(err)
	}
	return evs, nil
}
