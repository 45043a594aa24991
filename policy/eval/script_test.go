package eval_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/ponens/ponens/internal/script"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/trace"
)

// TestScripts runs the golden scripts of testdata/scripts against the
// reference evaluator: every rule's result and witnesses, every formula's
// value at every position.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/scripts/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := script.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			tr := trace.Build("run", s.Events)
			for _, r := range s.Rules {
				rule, probs := ruleset.FromFormula(r.ID, r.Formula)
				if probs != nil {
					t.Fatalf("%s:%d: %v", file, r.Line, probs)
				}
				got := eval.Evaluate(rule.Formula, tr, nil)
				if string(got.Outcome) != r.Result || !slices.Equal(got.Witnesses, r.Witnesses) {
					t.Errorf("%s:%d: %s = %s %v, want %s %v", file, r.Line, r.ID, got.Outcome, got.Witnesses, r.Result, r.Witnesses)
				}
			}
			for _, a := range s.At {
				f, err := ltl.Parse(a.Formula)
				if err != nil {
					t.Fatalf("%s:%d: %v", file, a.Line, err)
				}
				if len(a.Values) != len(tr.Positions) {
					t.Fatalf("%s:%d: %d values for %d positions", file, a.Line, len(a.Values), len(tr.Positions))
				}
				for i, want := range a.Values {
					if got := eval.HoldsAt(f, tr, nil, i); got != want {
						t.Errorf("%s:%d: %s at position %d = %v, want %v", file, a.Line, a.Formula, i, got, want)
					}
				}
			}
		})
	}
}
