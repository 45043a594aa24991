package api

import (
	"context"
	"strconv"
	"time"

	"github.com/ponens/ponens/schema"
)

// RuleCounts is a rule and its statuses over the runs of a window: a run
// where the rule emitted no verdict counts as satisfied.
type RuleCounts struct {
	RuleID      string      `json:"ruleId"`
	Version     string      `json:"version"`
	Description string      `json:"description"`
	Mode        schema.Mode `json:"mode"`
	// Text is the printed formula; empty for a rule the configured
	// manifest does not hold (the store keeps no text).
	Text       string `json:"text"`
	Runs       uint64 `json:"runs"`
	Violated   uint64 `json:"violated"`
	Satisfied  uint64 `json:"satisfied"`
	Pending    uint64 `json:"pending"`
	Unresolved uint64 `json:"unresolved"`
}

// RulesOptions pick the runs the counts are over, by start time.
type RulesOptions struct {
	Since, Until time.Time
}

// Rules lists the rules of the manifest and of the store with their
// status counts over the runs started in the window.
func (s *Server) Rules(ctx context.Context, o RulesOptions) ([]RuleCounts, error) {
	sel := Selection{Since: o.Since, Until: o.Until}
	total := newStmt("SELECT count() AS n FROM (SELECT run_id FROM runs GROUP BY run_id HAVING 1")
	windowed(total, sel)
	total.sql(")")
	ns, err := rows[struct {
		N uint64 `json:"n"`
	}](ctx, s.store, total)
	if err != nil {
		return nil, storeError(err)
	}
	st := newStmt(`SELECT toString(rule_id) AS ruleId, countIf(status = 'violated') AS violated, countIf(status = 'pending') AS pending,
  countIf(status = 'unresolved') AS unresolved
FROM run_rule_status FINAL`)
	if !o.Since.IsZero() || !o.Until.IsZero() {
		st.sql(" WHERE run_id IN (SELECT run_id FROM runs GROUP BY run_id HAVING 1")
		windowed(st, sel)
		st.sql(")")
	}
	st.sql(" GROUP BY rule_id")
	type row struct {
		RuleID     string `json:"ruleId"`
		Violated   uint64 `json:"violated"`
		Pending    uint64 `json:"pending"`
		Unresolved uint64 `json:"unresolved"`
	}
	counts, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	byID := map[string]row{}
	for _, c := range counts {
		byID[c.RuleID] = c
	}
	manifest, err := s.summaryRules(ctx, nil, nil)
	if err != nil {
		return nil, err
	}
	out := make([]RuleCounts, 0, len(manifest))
	for _, r := range manifest {
		c := byID[r.ID]
		rc := RuleCounts{RuleID: r.ID, Version: ruleVersion(r.ID), Description: r.Description, Mode: r.Mode, Text: r.Text,
			Runs: ns[0].N, Violated: c.Violated, Pending: c.Pending, Unresolved: c.Unresolved}
		if bad := c.Violated + c.Pending + c.Unresolved; bad <= rc.Runs {
			rc.Satisfied = rc.Runs - bad
		}
		out = append(out, rc)
	}
	return out, nil
}

// windowed adds the start-time conditions of sel to a HAVING over runs
// grouped by run_id.
func windowed(st *stmt, sel Selection) {
	if !sel.Since.IsZero() {
		st.sql(" AND min(started_at) >= " + st.ms(sel.Since))
	}
	if !sel.Until.IsZero() {
		st.sql(" AND min(started_at) < " + st.ms(sel.Until))
	}
}

// Point is one bucket of a series.
type Point struct {
	T          string `json:"t"`
	Violations uint64 `json:"violations"`
	Runs       uint64 `json:"runs"`
}

// RuleStats is a rule's violations over time.
type RuleStats struct {
	RuleID string  `json:"ruleId"`
	Step   string  `json:"step"`
	Points []Point `json:"points"`
}

// StatsOptions are a window and its bucket width.
type StatsOptions struct {
	Since, Until time.Time
	Step         time.Duration
}

// RuleStats counts the rule's violating transitions, and the runs they
// are on, per bucket of o.Step (by the verdict's time); buckets without a
// violation are left out.
func (s *Server) RuleStats(ctx context.Context, rule string, o StatsOptions) (*RuleStats, error) {
	if err := s.rulesKnown(ctx, []string{rule}); err != nil {
		return nil, err
	}
	st := newStmt("SELECT toInt64(toUnixTimestamp(toStartOfInterval(ts, toIntervalSecond(")
	st.sql(st.arg("UInt32", strconv.Itoa(int(o.Step/time.Second))))
	st.sql(")))) * 1000 AS ms, uniqExact(run_id, seq) AS violations, uniqExact(run_id) AS runs FROM verdicts WHERE rule_id = " + st.str(rule) + " AND status = 'violated'")
	timeWindow(st, "ts", o.Since, o.Until)
	st.sql(" GROUP BY ms ORDER BY ms")
	type row struct {
		MS         int64  `json:"ms"`
		Violations uint64 `json:"violations"`
		Runs       uint64 `json:"runs"`
	}
	rs, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	out := &RuleStats{RuleID: rule, Step: o.Step.String(), Points: []Point{}}
	for _, r := range rs {
		out.Points = append(out.Points, Point{T: timeText(msTime(r.MS)), Violations: r.Violations, Runs: r.Runs})
	}
	return out, nil
}

// timeWindow adds since/until conditions on column col.
func timeWindow(st *stmt, col string, since, until time.Time) {
	if !since.IsZero() {
		st.sql(" AND " + col + " >= " + st.ms(since))
	}
	if !until.IsZero() {
		st.sql(" AND " + col + " < " + st.ms(until))
	}
}
