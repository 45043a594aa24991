package main

import (
	"fmt"
	"io"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// embeddedSets loads, for each trace file, the policies it embeds (a
// reference trace's policies list), for `check` and `eval` given no rules:
// each trace is judged against its own policies. Files are loaded once
// each, in order; highStakes and enforce are the configured ones. A file
// that embeds no policy object, or whose policies do not load, is an error
// (exit 2) naming it; a policy named without a formula is skipped with a
// note on notes.
func embeddedSets(files []string, highStakes []string, enforce bool, notes io.Writer) (map[string]*ruleset.Set, error) {
	sets := make(map[string]*ruleset.Set, len(files))
	for _, f := range files {
		set, probs := ruleset.Load(f)
		for _, p := range set.Skipped {
			fmt.Fprintf(notes, "note: %v\n", p)
		}
		if len(probs) > 0 {
			return nil, exitWith(exitBadInput, "%s\n(without --rules or --formula, each trace is checked against the policies it embeds)", probs.Error())
		}
		set.Opts.HighStakesPaths = append(set.Opts.HighStakesPaths, highStakes...)
		set.Enforce = set.Enforce || enforce
		sets[f] = set
	}
	return sets, nil
}

// ruleUnion lists the rules of several engines once each, in order of first
// appearance: the rules of a summary whose traces each have their own. A
// rule id that two engines define differently is an error: one matrix row
// cannot hold two rules. files[i] is where engines[i]'s rules come from.
func ruleUnion(engines []*monitor.Engine, files []string) ([]monitor.Rule, error) {
	var out []monitor.Rule
	first := map[string]int{} // rule id → index in out
	from := map[string]string{}
	for i, eng := range engines {
		for _, r := range eng.Rules() {
			j, seen := first[r.ID]
			if !seen {
				first[r.ID], from[r.ID] = len(out), files[i]
				out = append(out, r)
				continue
			}
			if o := out[j]; o.Text != r.Text || o.Mode != r.Mode || o.Description != r.Description {
				return nil, exitWith(exitBadInput, "policy %s is defined differently in %s (%s) and %s (%s): check those traces separately, or give the policies with --rules",
					r.ID, from[r.ID], o.Text, files[i], r.Text)
			}
		}
	}
	return out, nil
}

// expandResults puts a run's results in the order of rules, the union
// every trace of the summary is listed against. A rule the run's own
// engine does not have (a policy another trace embeds) did not apply to
// the run: it is satisfied, with the result not_applicable.
func expandResults(rules []monitor.Rule, own []monitor.Result) []monitor.Result {
	byID := make(map[string]monitor.Result, len(own))
	for _, r := range own {
		byID[r.RuleID] = r
	}
	out := make([]monitor.Result, len(rules))
	for i, r := range rules {
		res, ok := byID[r.ID]
		if !ok {
			res = monitor.Result{RuleID: r.ID, Status: schema.StatusSatisfied, Outcome: eval.NotApplicable, Witness: -1}
		}
		out[i] = res
	}
	return out
}

// embedsPolicies reports whether the run's start carries a policies list,
// as a reference trace that embeds its policies does.
func embedsPolicies(r schema.Run) bool {
	if len(r.Events) == 0 || r.Events[0].Start == nil {
		return false
	}
	_, ok := r.Events[0].Start.Extra["policies"]
	return ok
}
