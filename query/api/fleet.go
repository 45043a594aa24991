package api

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"time"
)

// FleetRuns counts the runs started in a window.
type FleetRuns struct {
	Total    uint64 `json:"total"`
	Open     uint64 `json:"open"`     // no closing event yet
	Ended    uint64 `json:"ended"`    // finished, errored or canceled
	Violated uint64 `json:"violated"` // some rule's current status is violated
}

// RuleViolations is a rule's violations in a window: violating verdict
// transitions, and the runs they are on.
type RuleViolations struct {
	RuleID     string  `json:"ruleId"`
	Violations uint64  `json:"violations"`
	Runs       uint64  `json:"runs"`
	Points     []Point `json:"points"` // per bucket, buckets without a violation left out
}

// AgentCompliance is an agent's runs started in a window, those with a
// violated rule, and the share without.
type AgentCompliance struct {
	Agent      string  `json:"agent"`
	Runs       uint64  `json:"runs"`
	Violating  uint64  `json:"violating"`
	Compliance float64 `json:"compliance"` // 1 - violating/runs
}

// Fleet is the fleet at a glance over a window.
type Fleet struct {
	Since string    `json:"since"`
	Until string    `json:"until"`
	Step  string    `json:"step"`
	Runs  FleetRuns `json:"runs"`
	// ViolationsOverTime sums every rule's violations per bucket, with
	// the distinct runs they are on.
	ViolationsOverTime []Point `json:"violationsOverTime"`
	// TopRules are the violated rules, most violations first.
	TopRules []RuleViolations `json:"topRules"`
	// Agents are by compliance, worst first, then by name.
	Agents []AgentCompliance `json:"agents"`
}

// FleetOptions are a window (Until zero: now) and a bucket width, a whole
// number of hours.
type FleetOptions struct {
	Since, Until time.Time
	Step         time.Duration
}

// Fleet counts runs by state, violations per rule per bucket (from the
// hourly violations_rule_hour view: a bucket holds the hours that start in
// it) and agents by compliance, over the runs started in the window.
func (s *Server) Fleet(ctx context.Context, o FleetOptions) (*Fleet, error) {
	if o.Until.IsZero() {
		o.Until = s.opts.Now().UTC()
	}
	if o.Step <= 0 {
		o.Step = time.Hour
	}
	sel := Selection{Since: o.Since, Until: o.Until}
	out := &Fleet{Since: timeText(o.Since), Until: timeText(o.Until), Step: o.Step.String(), ViolationsOverTime: []Point{}, TopRules: []RuleViolations{}, Agents: []AgentCompliance{}}
	if o.Since.IsZero() {
		out.Since = ""
	}
	var err error
	if out.Runs, out.Agents, err = s.fleetRunsByAgent(ctx, sel); err != nil {
		return nil, err
	}
	if out.TopRules, out.ViolationsOverTime, err = s.fleetViolations(ctx, o); err != nil {
		return nil, err
	}
	return out, nil
}

// fleetViolations reads violations_rule_hour: per rule and bucket, then
// per rule over the window and per bucket over the rules.
func (s *Server) fleetViolations(ctx context.Context, o FleetOptions) ([]RuleViolations, []Point, error) {
	st := newStmt("SELECT toString(rule_id) AS ruleId, toInt64(toUnixTimestamp(toStartOfInterval(hour, toIntervalHour(")
	st.sql(st.arg("UInt32", strconv.Itoa(int(o.Step/time.Hour))))
	st.sql(")))) * 1000 AS ms, uniqExactMerge(violations) AS violations, uniqExactMerge(runs) AS runs FROM violations_rule_hour WHERE 1")
	if !o.Since.IsZero() {
		st.sql(" AND hour >= toStartOfHour(" + st.ms(o.Since) + ")")
	}
	st.sql(" AND hour < " + st.ms(o.Until))
	st.sql(" GROUP BY GROUPING SETS ((ruleId, ms), (ruleId), (ms)) ORDER BY ruleId, ms")
	type row struct {
		RuleID     string `json:"ruleId"`
		MS         int64  `json:"ms"`
		Violations uint64 `json:"violations"`
		Runs       uint64 `json:"runs"`
	}
	rs, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, nil, storeError(err)
	}
	byRule := map[string]*RuleViolations{}
	var rules []*RuleViolations
	overall := map[int64]Point{}
	for _, r := range rs {
		switch {
		case r.RuleID == "": // a bucket over every rule: its distinct runs (the violations are the rules' sum, below)
			p := overall[r.MS]
			p.T, p.Runs = timeText(msTime(r.MS)), r.Runs
			overall[r.MS] = p
		case r.MS == 0: // a rule's total over the window
			rv := &RuleViolations{RuleID: r.RuleID, Violations: r.Violations, Runs: r.Runs, Points: []Point{}}
			byRule[r.RuleID] = rv
			rules = append(rules, rv)
		}
	}
	for _, r := range rs {
		if rv := byRule[r.RuleID]; rv != nil && r.MS != 0 {
			rv.Points = append(rv.Points, Point{T: timeText(msTime(r.MS)), Violations: r.Violations, Runs: r.Runs})
			p := overall[r.MS]
			p.Violations += r.Violations
			overall[r.MS] = p
		}
	}
	slices.SortStableFunc(rules, func(a, b *RuleViolations) int { return cmp.Compare(b.Violations, a.Violations) }) // ties by id
	top := make([]RuleViolations, len(rules))
	for i, r := range rules {
		top[i] = *r
	}
	buckets := slices.Sorted(maps.Keys(overall))
	series := make([]Point, len(buckets))
	for i, ms := range buckets {
		series[i] = overall[ms]
	}
	return top, series, nil
}

// fleetRunsByAgent reads the runs started in the window once, joined to
// the runs with a violated rule: per agent its runs, those open, ended
// and violating; the fleet's counts are their sums.
func (s *Server) fleetRunsByAgent(ctx context.Context, sel Selection) (FleetRuns, []AgentCompliance, error) {
	st := newStmt(`SELECT toString(r.agent) AS agent, count() AS runs, countIf(r.ended_ms = 0) AS open, countIf(r.ended_ms > 0) AS ended,
    countIf(s.run_id != '') AS violating, round(1 - violating / runs, 6) AS compliance
FROM (SELECT run_id, max(agent) AS agent, toUnixTimestamp64Milli(max(ended_at)) AS ended_ms FROM runs GROUP BY run_id HAVING 1`)
	windowed(st, sel)
	st.sql(`) AS r LEFT JOIN (SELECT DISTINCT run_id FROM run_rule_status FINAL WHERE status = 'violated') AS s ON r.run_id = s.run_id
GROUP BY agent ORDER BY compliance, agent`)
	type row struct {
		AgentCompliance
		Open  uint64 `json:"open"`
		Ended uint64 `json:"ended"`
	}
	rs, err := rows[row](ctx, s.store, st)
	if err != nil {
		return FleetRuns{}, nil, storeError(err)
	}
	var total FleetRuns
	agents := make([]AgentCompliance, len(rs))
	for i, r := range rs {
		agents[i] = r.AgentCompliance
		total.Total += r.Runs
		total.Open += r.Open
		total.Ended += r.Ended
		total.Violated += r.Violating
	}
	return total, agents, nil
}
