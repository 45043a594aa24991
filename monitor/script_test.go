package monitor

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/internal/script"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// TestScripts runs the language's golden scripts (policy/eval/testdata) on
// the monitor: each rule's final outcome, and, where the script lists them,
// the exact verdict transitions with their subformulas.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("../policy/eval/testdata/scripts/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := script.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			set := &ruleset.Set{}
			for _, r := range s.Rules {
				rule, probs := ruleset.FromFormula(r.ID, r.Formula)
				if probs != nil {
					t.Fatal(probs)
				}
				set.Rules = append(set.Rules, rule)
			}
			eng, errs := NewEngine(set)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			run := eng.NewRun("run")
			got := map[string][]string{}
			record := func(vs []schema.VerdictEvent) {
				for _, v := range vs {
					got[v.Rule.ID] = append(got[v.Rule.ID], verdictLine(v))
					if v.Cause != nil && !strings.Contains(ltl.Print(set.Rules[index(set, v.Rule.ID)].Formula), v.Cause.Subformula) {
						t.Errorf("cause.subformula %q is not in the printed rule", v.Cause.Subformula)
					}
				}
			}
			for i := range s.Events {
				vs, err := run.Add(&s.Events[i])
				if err != nil {
					t.Fatal(err)
				}
				record(vs)
			}
			record(run.End())
			for i, res := range run.Results() {
				if want := s.Rules[i].Result; string(res.Outcome) != want {
					t.Errorf("%s:%d: %s = %s, want %s", file, s.Rules[i].Line, res.RuleID, res.Outcome, want)
				}
			}
			for id, want := range s.Verdicts {
				var lines []string
				for _, v := range want {
					line := fmt.Sprintf("%d %s", v.Seq, v.Status)
					if v.Leaning != "" {
						line += " " + v.Leaning
					}
					if v.Subformula != "" {
						line += " | " + v.Subformula
					}
					lines = append(lines, line)
				}
				if g, w := strings.Join(got[id], "\n"), strings.Join(lines, "\n"); g != w {
					t.Errorf("%s: verdicts of %s\n got:\n%s\nwant:\n%s", file, id, g, w)
				}
			}
		})
	}
}

func verdictLine(v schema.VerdictEvent) string {
	line := fmt.Sprintf("%d %s", v.Seq, v.Status)
	if v.Leaning != "" {
		line += " " + string(v.Leaning)
	}
	if v.Cause != nil && v.Status != schema.StatusSatisfied {
		line += " | " + v.Cause.Subformula
	}
	return line
}

func index(set *ruleset.Set, id string) int {
	for i, r := range set.Rules {
		if r.ID == id {
			return i
		}
	}
	return -1
}
