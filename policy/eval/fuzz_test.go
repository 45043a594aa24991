package eval_test

import (
	"slices"
	"testing"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// FuzzEvaluate feeds a formula and a trace file (a JSONL stream or a
// reference trace) to the reference evaluator: whatever loads must evaluate
// without panicking, to pass, fail or not_applicable, with witnesses only on
// failure and only ids of the trace's actions, the same on a second run,
// agreeing with HoldsAt at the first position, and with the incremental
// monitor wherever the monitor compiles the rule. The seed corpus
// (testdata/fuzz/FuzzEvaluate) pairs the golden scripts' formulas with
// their runs.
func FuzzEvaluate(f *testing.F) {
	f.Fuzz(func(t *testing.T, formula string, data []byte) {
		rule, probs := ruleset.FromFormula("r", formula)
		if probs != nil {
			return
		}
		events, err := schema.Decode("f.jsonl", data, 1<<16)
		if err != nil {
			return
		}
		for _, run := range schema.SplitRuns(events) {
			tr := trace.Build(run.ID, run.Events)
			got := eval.Evaluate(rule.Formula, tr, nil)
			switch got.Outcome {
			case eval.Pass, eval.NotApplicable:
				if len(got.Witnesses) > 0 {
					t.Fatalf("%s with witnesses %v", got.Outcome, got.Witnesses)
				}
			case eval.Fail:
				for _, id := range got.Witnesses {
					if !slices.ContainsFunc(tr.Positions, func(p *trace.Position) bool { return p.Action.ID == id }) {
						t.Fatalf("witness %d is no action of the trace", id)
					}
				}
			default:
				t.Fatalf("outcome %q", got.Outcome)
			}
			if again := eval.Evaluate(rule.Formula, tr, nil); again.Outcome != got.Outcome || !slices.Equal(again.Witnesses, got.Witnesses) {
				t.Fatalf("second evaluation %v, first %v", again, got)
			}
			if holds := eval.HoldsAt(rule.Formula, tr, nil, 0); holds != (got.Outcome != eval.Fail) {
				t.Fatalf("HoldsAt(0) = %v, Evaluate = %s", holds, got.Outcome)
			}
			monitorAgrees(t, rule, run.Events, got.Outcome)
		}
	})
}

// monitorAgrees runs the monitor over the run's events, when it compiles
// the rule and accepts the events, and compares its final outcome.
func monitorAgrees(t *testing.T, rule *ruleset.Rule, events []schema.Event, want eval.Outcome) {
	eng, errs := monitor.NewEngine(&ruleset.Set{Rules: []*ruleset.Rule{rule}})
	if len(errs) > 0 {
		return
	}
	run := eng.NewRun("r")
	for i := range events {
		if _, err := run.Add(&events[i]); err != nil {
			return
		}
	}
	if !run.Ended() {
		run.End()
	}
	if got := run.Results()[0].Outcome; got != want {
		t.Fatalf("monitor says %s, reference %s", got, want)
	}
}
