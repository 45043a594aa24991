package api

import (
	"context"
	"strconv"
	"strings"

	"github.com/ponens/ponens/schema"
)

// Run is a run as the API lists it.
type Run struct {
	RunID     string  `json:"runId"`
	Agent     string  `json:"agent"`
	Project   string  `json:"project"`
	StartedAt string  `json:"startedAt"`
	EndedAt   *string `json:"endedAt"` // null while the run is open
	// Outcome is completed, errored or canceled once the run ended, empty
	// while it is open.
	Outcome string `json:"outcome"`
	// Events is the run's highest event seq (events count from 1).
	Events uint64 `json:"events"`
	// Status is the worst status of the run's rules: violated, then
	// unresolved, pending, satisfied.
	Status schema.VerdictStatus `json:"status"`
	// Violated are the rules violated on the run, sorted.
	Violated []string `json:"violated"`
}

// RunPage is one page of runs; NextCursor is empty on the last.
type RunPage struct {
	Runs       []Run  `json:"runs"`
	NextCursor string `json:"nextCursor"`
}

// RunsOptions select a page of runs.
type RunsOptions struct {
	Selection
	Limit  int
	Cursor string // nextCursor of the previous page
}

// runRow is a row of the runs statement.
type runRow struct {
	RunID     string   `json:"runId"`
	Agent     string   `json:"agent"`
	Project   string   `json:"project"`
	StartedMS int64    `json:"startedMs"`
	EndedMS   int64    `json:"endedMs"`
	Outcome   string   `json:"outcome"`
	Events    uint64   `json:"events"`
	Worst     int      `json:"worst"`
	Violated  []string `json:"violated"`
}

// worst ranks of statuses, as the runs statement computes them.
var statusRank = map[schema.VerdictStatus]int{schema.StatusSatisfied: 1, schema.StatusPending: 2, schema.StatusUnresolved: 3, schema.StatusViolated: 4}

var rankStatus = map[int]schema.VerdictStatus{1: schema.StatusSatisfied, 2: schema.StatusPending, 3: schema.StatusUnresolved, 4: schema.StatusViolated}

// outcomes maps a closing event's type to the run's outcome.
var outcomes = map[string]string{
	string(schema.TypeRunFinish): string(schema.OutcomeCompleted),
	string(schema.TypeRunError):  string(schema.OutcomeErrored),
	string(schema.TypeRunCancel): string(schema.OutcomeCanceled),
}

// runsStmt is the statement of the runs sel selects, newest first, at most
// limit after cur (limit 0: all).
func runsStmt(sel Selection, cur *cursor, limit int) *stmt {
	s := newStmt(`SELECT r.run_id AS runId, r.agent AS agent, r.project AS project,
  toUnixTimestamp64Milli(r.started_at) AS startedMs, toUnixTimestamp64Milli(r.ended_at) AS endedMs,
  r.outcome AS outcome, r.last_seq AS events,
  greatest(s.worst, 1) AS worst, s.violated AS violated
FROM (SELECT run_id, max(agent) AS agent, max(project) AS project, min(started_at) AS started_at,
    max(ended_at) AS ended_at, max(outcome) AS outcome, max(last_seq) AS last_seq
  FROM runs`)
	if len(sel.Runs) > 0 {
		s.sql(" WHERE run_id " + s.in(sel.Runs))
	}
	s.sql(" GROUP BY run_id HAVING 1")
	if sel.Agent != "" {
		s.sql(" AND agent = " + s.str(sel.Agent))
	}
	if sel.Project != "" {
		s.sql(" AND project = " + s.str(sel.Project))
	}
	if !sel.Since.IsZero() {
		s.sql(" AND started_at >= " + s.ms(sel.Since))
	}
	if !sel.Until.IsZero() {
		s.sql(" AND started_at < " + s.ms(sel.Until))
	}
	s.sql(`) AS r
LEFT JOIN (SELECT run_id,
    max(multiIf(status = 'violated', 4, status = 'unresolved', 3, status = 'pending', 2, 1)) AS worst,
    arraySort(groupArrayIf(toString(rule_id), status = 'violated')) AS violated
  FROM run_rule_status FINAL WHERE 1`)
	if len(sel.Rules) > 0 {
		s.sql(" AND rule_id " + s.in(sel.Rules))
	}
	if len(sel.Runs) > 0 {
		s.sql(" AND run_id " + s.in(sel.Runs))
	}
	s.sql(" GROUP BY run_id) AS s ON r.run_id = s.run_id WHERE 1")
	if sel.Status != "" {
		s.sql(" AND greatest(s.worst, 1) = " + s.arg("UInt8", strconv.Itoa(statusRank[sel.Status])))
	}
	if cur != nil {
		c := s.arg("Int64", strconv.FormatInt(cur.StartedMS, 10))
		s.sql(" AND (startedMs < " + c + " OR (startedMs = " + c + " AND r.run_id < " + s.str(cur.RunID) + "))")
	}
	s.sql(" ORDER BY r.started_at DESC, r.run_id DESC")
	if limit > 0 {
		s.sql(" LIMIT " + s.arg("UInt32", strconv.Itoa(limit)))
	}
	return s
}

func (r runRow) run() Run {
	out := Run{RunID: r.RunID, Agent: r.Agent, Project: r.Project, StartedAt: timeText(msTime(r.StartedMS)),
		Outcome: outcomes[r.Outcome], Events: r.Events, Status: rankStatus[r.Worst], Violated: r.Violated}
	if r.EndedMS > 0 {
		t := timeText(msTime(r.EndedMS))
		out.EndedAt = &t
	}
	if out.Violated == nil {
		out.Violated = []string{}
	}
	return out
}

// Runs lists the runs of a selection, newest first, a page at a time.
func (s *Server) Runs(ctx context.Context, o RunsOptions) (*RunPage, error) {
	if err := s.rulesKnown(ctx, o.Rules); err != nil {
		return nil, err
	}
	cur, err := decodeCursor(o.Cursor)
	if err != nil {
		return nil, err
	}
	if o.Limit <= 0 {
		o.Limit = 100
	}
	rs, err := rows[runRow](ctx, s.store, runsStmt(o.Selection, cur, o.Limit+1))
	if err != nil {
		return nil, storeError(err)
	}
	page := &RunPage{Runs: []Run{}}
	for i, r := range rs {
		if i == o.Limit {
			last := rs[i-1]
			page.NextCursor = cursor{StartedMS: last.StartedMS, RunID: last.RunID}.encode()
			break
		}
		page.Runs = append(page.Runs, r.run())
	}
	return page, nil
}

// RuleStatus is one rule's current (final, once the run ended) status on
// a run. A rule with no verdict on the run has held throughout: it is
// satisfied, with Seq 0 and no TS.
type RuleStatus struct {
	RuleID  string               `json:"ruleId"`
	Version string               `json:"version"`
	Mode    schema.Mode          `json:"mode"`
	Status  schema.VerdictStatus `json:"status"`
	Seq     uint64               `json:"seq"`          // the event of its last transition
	TS      string               `json:"ts,omitempty"` // the time of that event
}

// RunDetail is a run and its rules' statuses.
type RunDetail struct {
	Run   Run          `json:"run"`
	Rules []RuleStatus `json:"rules"`
}

// RunDetail returns the run and the statuses of the rules a summary of it
// lists (the rule manifest, then the other rules with a verdict on it),
// in that order; not_found when the store has no event of it.
func (s *Server) RunDetail(ctx context.Context, run string) (*RunDetail, error) {
	rs, err := rows[runRow](ctx, s.store, runsStmt(Selection{Runs: []string{run}}, nil, 1))
	if err != nil {
		return nil, storeError(err)
	}
	if len(rs) == 0 {
		return nil, notFound("run %s: the store has no event of it", safe(run))
	}
	st := newStmt("SELECT toString(rule_id) AS ruleId, toString(mode) AS mode, toString(status) AS status, seq, toUnixTimestamp64Milli(ts) AS ms FROM run_rule_status FINAL WHERE run_id = ")
	st.sql(st.str(run))
	type row struct {
		RuleID string `json:"ruleId"`
		Mode   string `json:"mode"`
		Status string `json:"status"`
		Seq    uint64 `json:"seq"`
		MS     int64  `json:"ms"`
	}
	statuses, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	manifest, err := s.summaryRules(ctx, nil, []string{run})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]row, len(statuses))
	for _, r := range statuses {
		byID[r.RuleID] = r
	}
	d := &RunDetail{Run: rs[0].run(), Rules: make([]RuleStatus, 0, len(manifest))}
	for _, m := range manifest {
		st := RuleStatus{RuleID: m.ID, Version: ruleVersion(m.ID), Mode: m.Mode, Status: schema.StatusSatisfied}
		if r, ok := byID[m.ID]; ok {
			st.Mode, st.Status, st.Seq, st.TS = schema.Mode(r.Mode), schema.VerdictStatus(r.Status), r.Seq, timeText(msTime(r.MS))
		}
		if st.Mode == "" {
			st.Mode = schema.ModeObserve
		}
		d.Rules = append(d.Rules, st)
	}
	return d, nil
}

// ruleVersion is the version in a verdict's rule id: what follows its
// last '@', "1" when there is none.
func ruleVersion(id string) string {
	if i := strings.LastIndexByte(id, '@'); i >= 0 {
		return id[i+1:]
	}
	return "1"
}
