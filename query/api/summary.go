package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ponens/ponens/schema"
)

// maxSummaryRuns is the most runs one summary covers: each run's events
// are read for the content hash.
const maxSummaryRuns = 10000

// SummaryOptions select the runs and rules of a summary. Runs given by id
// keep their order; otherwise runs come oldest first (start time, then
// run id). Rules given by id keep their order; otherwise the configured
// rule manifest comes first, in its order, then any other rule with a
// stored verdict on the runs, by id.
type SummaryOptions struct {
	Selection
}

// Summary computes summary.json (formatVersion 1) of the selected runs
// and rules with schema.SummaryFold, the fold `ponens check` uses: the
// cells are the stored verdicts' final statuses. Each run is a trace named
// by its run id, with its verdict stream at schema.RunTraceStream.
// matrix.results (results by finite-trace semantics) comes from
// monitoring the stored events with Options.Monitor, and is absent
// without it. For ended runs it is, byte for byte, what `ponens check
// --out OUT --verdicts-dir OUT/verdicts` writes for the same events and
// rules, each run in a file named by its run id.
func (s *Server) Summary(ctx context.Context, o SummaryOptions) ([]byte, error) {
	runs, err := s.summaryRuns(ctx, o.Selection)
	if err != nil {
		return nil, err
	}
	manifest, err := s.summaryRules(ctx, o.Rules, runs)
	if err != nil {
		return nil, err
	}
	fold, err := schema.NewSummaryFold(manifest)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(manifest))
	for i, r := range manifest {
		ids[i] = r.ID
	}
	withResults := s.engines != nil && s.engines.covers(manifest)
	for _, run := range runs {
		events, err := s.runEvents(ctx, run)
		if err != nil {
			return nil, err
		}
		stream, err := s.runVerdicts(ctx, run, ids)
		if err != nil {
			return nil, err
		}
		var results []string
		if withResults {
			if results, err = s.engines.results(run, events, manifest); err != nil {
				return nil, fmt.Errorf("summary: %w", err)
			}
		}
		entry := schema.TraceManifestEntry{ID: run, RunID: run, Verdicts: schema.RunTraceStream(run)}
		if _, err := fold.Add(entry, events, stream, results); err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
	}
	return encodeSummary(fold.Summary())
}

// encodeSummary writes s as summary.json is written: indented by two
// spaces, with <, > and & as they are, and a final newline.
func encodeSummary(s *schema.Summary) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(s)
	return b.Bytes(), err
}

// summaryRuns are the ids of the runs of sel, in summary order.
func (s *Server) summaryRuns(ctx context.Context, sel Selection) ([]string, error) {
	rules := sel.Rules
	sel.Rules = nil // the rules pick the matrix's rows, not the runs, unless a status is asked for
	if sel.Status != "" {
		sel.Rules = rules
	}
	rs, err := rows[runRow](ctx, s.store, runsStmt(sel, nil, maxSummaryRuns+1))
	if err != nil {
		return nil, storeError(err)
	}
	if len(rs) > maxSummaryRuns {
		return nil, &Error{Type: ErrBadData, Msg: fmt.Sprintf("the selection holds more than %d runs: narrow it (run, agent, project, since, until)", maxSummaryRuns)}
	}
	found := make(map[string]bool, len(rs))
	for _, r := range rs {
		found[r.RunID] = true
	}
	if len(sel.Runs) > 0 {
		var out []string
		for _, id := range sel.Runs {
			if found[id] {
				out = append(out, id)
			} else if sel.Agent == "" && sel.Project == "" && sel.Since.IsZero() && sel.Until.IsZero() && sel.Status == "" {
				return nil, notFound("run %s: the store has no event of it", safe(id))
			}
		}
		return out, nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r.RunID // the statement lists newest first
	}
	return out, nil
}

// rulesKnown is not_found for the first of ids that neither the rule
// manifest nor a stored verdict names: a selection by an unknown rule is
// refused, not answered as if the rule held everywhere.
func (s *Server) rulesKnown(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.summaryRules(ctx, ids, nil)
	return err
}

// summaryRules is the rule manifest of a summary of runs: the rules asked
// for (ids) in their order, else the configured manifest and then the
// other rules with a verdict on runs. A rule known neither to the
// manifest nor to the store is not_found.
func (s *Server) summaryRules(ctx context.Context, ids []string, runs []string) ([]schema.RuleManifestEntry, error) {
	byID := make(map[string]schema.RuleManifestEntry, len(s.opts.Rules))
	for _, r := range s.opts.Rules {
		byID[r.ID] = r
	}
	stored, err := s.storedRules(ctx, ids, runs)
	if err != nil {
		return nil, err
	}
	for _, r := range stored {
		if _, ok := byID[r.ID]; !ok {
			byID[r.ID] = r
		}
	}
	var out []schema.RuleManifestEntry
	if len(ids) > 0 {
		for _, id := range ids {
			r, ok := byID[id]
			if !ok {
				return nil, notFound("rule %s: neither the rule manifest nor a stored verdict names it", safe(id))
			}
			out = append(out, r)
		}
		return out, nil
	}
	out = slices.Clone(s.opts.Rules)
	for _, r := range stored {
		if !slices.ContainsFunc(out, func(m schema.RuleManifestEntry) bool { return m.ID == r.ID }) {
			out = append(out, r)
		}
	}
	if out == nil {
		out = []schema.RuleManifestEntry{}
	}
	return out, nil
}

// storedRules are the rules with a stored verdict (on runs, when given;
// among ids, when given), by id, described as their latest verdict does;
// their text is not stored.
func (s *Server) storedRules(ctx context.Context, ids, runs []string) ([]schema.RuleManifestEntry, error) {
	st := newStmt("SELECT toString(rule_id) AS id, toString(argMax(rule_description, stream_seq)) AS description, toString(argMax(mode, stream_seq)) AS mode FROM verdicts WHERE 1")
	if len(ids) > 0 {
		st.sql(" AND rule_id " + st.in(ids))
	}
	if len(runs) > 0 && len(runs) <= maxValues {
		st.sql(" AND run_id " + st.in(runs))
	}
	st.sql(" GROUP BY rule_id ORDER BY rule_id")
	type row struct {
		ID          string `json:"id"`
		Description string `json:"description"`
		Mode        string `json:"mode"`
	}
	rs, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	out := make([]schema.RuleManifestEntry, len(rs))
	for i, r := range rs {
		out[i] = schema.RuleManifestEntry{ID: r.ID, Description: r.Description, Mode: schema.Mode(r.Mode)}
	}
	return out, nil
}
