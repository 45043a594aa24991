package stdcheck_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/policy/stdcheck"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// cases holds, for every standard check, a run it passes and a run it fails,
// as event streams (one JSON event per line; envelope fields filled in).
var cases = map[string]struct{ pass, fail string }{
	"data_flow_integrity": {
		pass: `{"type":"action","action":{"id":1,"type":"Formalize","outputs":["m1"],"artifacts":[{"artifact_id":"m1","artifact_type":"IMLModel","producer_action_id":1}]}}
{"type":"action","action":{"id":2,"type":"Verify","inputs":["m1"]}}`,
		fail: `{"type":"action","action":{"id":1,"type":"Formalize","outputs":["m1"],"artifacts":[{"artifact_id":"m1","artifact_type":"IMLModel","producer_action_id":1}]}}
{"type":"action","action":{"id":2,"type":"Verify","inputs":["m1","ghost"]}}`,
	},
	"goals_reference_valid_artifacts": {
		pass: `{"type":"action","action":{"id":1,"type":"Formalize","outputs":["m1"],"artifacts":[{"artifact_id":"m1","artifact_type":"FormalModel","producer_action_id":1}]}}
{"type":"action","action":{"id":2,"type":"DefineVG","outputs":["g1","g2"],"artifacts":[{"artifact_id":"g1","artifact_type":"VerificationGoal","producer_action_id":2,"payload":{"target_artifact_id":"m1"}},{"artifact_id":"g2","artifact_type":"VerificationGoal","producer_action_id":2,"payload":{}}]}}`,
		fail: `{"type":"action","action":{"id":1,"type":"Formalize","outputs":["s1"],"artifacts":[{"artifact_id":"s1","artifact_type":"SourceCode","producer_action_id":1}]}}
{"type":"action","action":{"id":2,"type":"DefineVG","outputs":["g1"],"artifacts":[{"artifact_id":"g1","artifact_type":"VerificationGoal","producer_action_id":2,"payload":{"target_artifact_id":"s1"}}]}}`,
	},
	"files_modified_consistent": {
		pass: `{"type":"run.start","start":{"extra":{"files_modified":["src/a.py","src/b.py"]}}}
{"type":"action","action":{"id":1,"type":"EditFile","evidence":[{"type":"FileRef","ref":"src/a.py"}]}}
{"type":"action","action":{"id":2,"type":"CreateFile","evidence":[{"type":"FileRef","ref":"src/b.py"}]}}
{"type":"action","action":{"id":3,"type":"ReadFile","evidence":[{"type":"FileRef","ref":"src/c.py"}]}}`,
		fail: `{"type":"run.start","start":{"extra":{"files_modified":["src/a.py"]}}}
{"type":"action","action":{"id":1,"type":"EditFile","evidence":[{"type":"FileRef","ref":"src/a.py"}]}}
{"type":"action","action":{"id":2,"type":"DeleteFile","evidence":[{"type":"FileRef","ref":"src/b.py"}]}}`,
	},
	"generated_tests_require_decomposition": {
		pass: `{"type":"action","action":{"id":1,"type":"Decompose","outputs":["d1"],"artifacts":[{"artifact_id":"d1","artifact_type":"StateSpaceAnalysisResult","producer_action_id":1}]}}
{"type":"action","action":{"id":2,"type":"Generate","outputs":["o1","t1"],"artifacts":[{"artifact_id":"o1","artifact_type":"Observation","derived_from":["d1"],"producer_action_id":2},{"artifact_id":"t1","artifact_type":"GeneratedTests","derived_from":["o1"],"producer_action_id":2}]}}`,
		fail: `{"type":"action","action":{"id":1,"type":"Formalize","outputs":["m1"],"artifacts":[{"artifact_id":"m1","artifact_type":"IMLModel","producer_action_id":1}]}}
{"type":"action","action":{"id":2,"type":"Generate","outputs":["t1"],"artifacts":[{"artifact_id":"t1","artifact_type":"GeneratedTests","derived_from":["m1"],"producer_action_id":2}]}}`,
	},
	"no_open_critical_residuals": {
		pass: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"severity":"critical","status":"Waived"}}}
{"type":"action","action":{"id":1,"type":"EditFile"}}`,
		fail: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"severity":"CRITICAL"}}}
{"type":"action","action":{"id":1,"type":"EditFile"}}`,
	},
	"high_severity_residuals_acknowledged_before_commit": {
		pass: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"severity":"High"}}}
{"type":"artifact","artifact":{"artifact_id":"x1","artifact_type":"ResidualResolution","payload":{"residual_id":"r1","status":"Acknowledged"}}}
{"type":"action","action":{"id":1,"type":"GitCommit"}}
{"type":"residual","residual":{"artifact_id":"r2","artifact_type":"Residual","payload":{"severity":"Critical"}}}`,
		fail: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"severity":"Medium"}}}
{"type":"residual","residual":{"artifact_id":"r2","artifact_type":"Residual","payload":{"severity":"high","status":"open"}}}
{"type":"action","action":{"id":1,"type":"GitCommit"}}`,
	},
	"unverified_residuals_have_suggested_check": {
		pass: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"kind":"Unverified","suggested_check":"prove lemma 3"}}}
{"type":"residual","residual":{"artifact_id":"r2","artifact_type":"Residual","payload":{"kind":"Assumption"}}}
{"type":"action","action":{"id":1,"type":"EditFile"}}`,
		fail: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"kind":"unverified","suggested_check":""}}}
{"type":"action","action":{"id":1,"type":"EditFile"}}`,
	},
	"assumptions_are_located": {
		pass: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"kind":"Assumption","target":"src/a.py"}}}
{"type":"residual","residual":{"artifact_id":"r2","artifact_type":"Residual","payload":{"kind":"assumption","related_artifact_ids":["m1"]}}}
{"type":"action","action":{"id":1,"type":"EditFile"}}`,
		fail: `{"type":"residual","residual":{"artifact_id":"r1","artifact_type":"Residual","payload":{"kind":"Assumption","related_artifact_ids":[]}}}
{"type":"action","action":{"id":1,"type":"EditFile"}}`,
	},
}

func events(t *testing.T, text string) []schema.Event {
	t.Helper()
	var out []schema.Event
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if !strings.Contains(lines[0], `"run.start"`) {
		lines = append([]string{`{"type":"run.start"}`}, lines...)
	}
	lines = append(lines, `{"type":"run.finish"}`)
	for i, l := range lines {
		var e schema.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		e.V, e.RunID, e.Seq = schema.EnvelopeVersion, "run", uint64(i+1)
		out = append(out, e)
	}
	return out
}

// TestChecks runs every standard check, as a rule whose formula is its name,
// on a run it passes and a run it fails, with the reference evaluator and
// with the incremental monitor.
func TestChecks(t *testing.T) {
	for _, name := range stdcheck.Names() {
		c, ok := cases[name]
		if !ok {
			t.Errorf("%s: no test runs", name)
			continue
		}
		rule, probs := ruleset.FromFormula(name, name)
		if probs != nil {
			t.Fatalf("%s: %v", name, probs)
		}
		if rule.Check != name {
			t.Errorf("%s: rule.Check = %q", name, rule.Check)
		}
		eng, errs := monitor.NewEngine(&ruleset.Set{Rules: []*ruleset.Rule{rule}})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs[0])
		}
		for _, tc := range []struct {
			text string
			want eval.Outcome
		}{{c.pass, eval.Pass}, {c.fail, eval.Fail}} {
			evs := events(t, tc.text)
			if got := eval.Evaluate(rule.Formula, trace.Build("run", evs), nil).Outcome; got != tc.want {
				t.Errorf("%s: reference evaluator says %s, want %s", name, got, tc.want)
			}
			run := eng.NewRun("run")
			for i := range evs {
				if _, err := run.Add(&evs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if got := run.Results()[0].Outcome; got != tc.want {
				t.Errorf("%s: monitor says %s, want %s", name, got, tc.want)
			}
		}
	}
}

// TestGetAndNames: the library holds exactly the eight standard checks, and
// a name that is not one is not found.
func TestGetAndNames(t *testing.T) {
	want := "assumptions_are_located data_flow_integrity files_modified_consistent generated_tests_require_decomposition " +
		"goals_reference_valid_artifacts high_severity_residuals_acknowledged_before_commit no_open_critical_residuals " +
		"unverified_residuals_have_suggested_check"
	if got := strings.Join(stdcheck.Names(), " "); got != want {
		t.Errorf("Names() = %s", got)
	}
	if _, ok := stdcheck.Get("tests_before_commit"); ok {
		t.Error("Get found a check that is not standard")
	}
	c, ok := stdcheck.Get("no_open_critical_residuals")
	if !ok || c.Description == "" || !strings.Contains(c.Formula, "residuals") {
		t.Errorf("Get(no_open_critical_residuals) = %+v, %v", c, ok)
	}
}

// TestUserPredicateWins: a rules file that defines a predicate with a
// standard check's name means its own predicate.
func TestUserPredicateWins(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/rules.yaml"
	body := "version: 1\npredicates:\n  data_flow_integrity: 'rationale ≠ ∅'\nrules:\n  - id: r\n    formula: G(data_flow_integrity)\n  - id: s\n    formula: data_flow_integrity\n"
	if err := writeFile(file, body); err != nil {
		t.Fatal(err)
	}
	set, probs := ruleset.Load(file)
	if probs != nil {
		t.Fatal(probs)
	}
	for _, r := range set.Rules {
		if r.Check != "" {
			t.Errorf("rule %s: expanded to the standard check %s (%s)", r.ID, r.Check, r.Text)
		}
	}

}

func writeFile(name, body string) error { return os.WriteFile(name, []byte(body), 0o644) }
