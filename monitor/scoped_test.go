package monitor

import (
	"testing"

	"github.com/ponens/ponens/internal/script"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/trace"
)

// TestScopedFieldsAlone runs each rule of the scoped-fields script on its
// own, so that no structural rule beside it makes the engine keep the
// artifact graph: a rule that reads a matched artifact's derived_from or
// producer must keep it by itself, and agree with the reference evaluator.
func TestScopedFieldsAlone(t *testing.T) {
	s, err := script.Load("../policy/eval/testdata/scripts/scoped_fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	formulas := []string{
		"G(GeneratedTests → derived_from ≠ ∅)",
		"G(GeneratedTests → ∃ x ∈ derived_from . x.type = Observation)",
		"G(GeneratedTests(derived_from = ∅))",
		"G(VerificationGoal → producer ≠ ∅)",
	}
	for _, r := range s.Rules {
		formulas = append(formulas, r.Formula)
	}
	for _, text := range formulas {
		rule, probs := ruleset.FromFormula("r", text)
		if probs != nil {
			t.Fatal(probs)
		}
		eng, errs := NewEngine(&ruleset.Set{Rules: []*ruleset.Rule{rule}})
		if len(errs) > 0 {
			t.Fatal(errs[0])
		}
		run := eng.NewRun("run")
		for i := range s.Events {
			if _, err := run.Add(&s.Events[i]); err != nil {
				t.Fatal(err)
			}
		}
		want := eval.Evaluate(rule.Formula, trace.Build("run", s.Events), nil).Outcome
		if got := run.Results()[0].Outcome; got != want {
			t.Errorf("%s (%s): monitor %s, reference %s", text, rule.Level, got, want)
		}
	}
}
