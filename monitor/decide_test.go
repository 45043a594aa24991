package monitor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

func guardrails(t *testing.T) *Engine {
	t.Helper()
	set, probs := ruleset.Load("testdata/policymd/rules.yaml", "testdata/policymd/POLICY.md")
	if probs != nil {
		t.Fatal(probs)
	}
	// A POLICY.md file has no enforce key of its own: the modes of its
	// rules are in force when enforcement is on for the whole set.
	set.Enforce = true
	eng, errs := NewEngine(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return eng
}

func toolCall(id int64, capability string, payload, constraints map[string]any) *schema.Action {
	raw := func(m map[string]any) json.RawMessage {
		if m == nil {
			return nil
		}
		b, _ := json.Marshal(m)
		return b
	}
	return &schema.Action{ID: id, Type: "ToolCall", Capability: capability, Payload: raw(payload), Constraints: raw(constraints)}
}

type feeder struct {
	t   *testing.T
	run *Run
	seq uint64
}

func (f *feeder) add(typ schema.EventType, a *schema.Action) []schema.VerdictEvent {
	f.seq++
	ev := schema.Event{V: 1, RunID: "r", Seq: f.seq, TS: time.Unix(int64(f.seq), 0), Type: typ, Action: a}
	vs, err := f.run.Add(&ev)
	if err != nil {
		f.t.Fatal(err)
	}
	return append([]schema.VerdictEvent(nil), vs...)
}

// TestPolicyMDVerdicts: POLICY.md rules are in the manifest with their label
// and no formula, are judged on every tool call, and a deny match violates
// the rule with mode deny, require_approval with mode suspend.
func TestPolicyMDVerdicts(t *testing.T) {
	eng := guardrails(t)
	byID := map[string]Rule{}
	for _, r := range eng.Rules() {
		byID[r.ID] = r
	}
	if r := byID["no-env-writes"]; r.Formula != nil || r.Mode != schema.ModeDeny ||
		r.Text != `POLICY.md project-guardrails: deny file.write when payload.path includes ".env"` {
		t.Errorf("manifest entry %+v", r)
	}
	if r := byID["big-payments"]; r.Mode != schema.ModeSuspend {
		t.Errorf("require_approval must report mode suspend, got %s", r.Mode)
	}
	f := &feeder{t: t, run: eng.NewRun("r")}
	f.add(schema.TypeRunStart, nil)
	if vs := f.add(schema.TypeAction, toolCall(1, "file.write", map[string]any{"path": "docs/.env.example"}, nil)); len(vs) != 0 {
		t.Errorf("a higher-priority allow wins: %v", vs)
	}
	vs := f.add(schema.TypeAction, toolCall(2, "file.write", map[string]any{"path": "app/.env"}, nil))
	if len(vs) != 1 || vs[0].Rule.ID != "no-env-writes" || vs[0].Status != schema.StatusViolated || vs[0].Mode != schema.ModeDeny ||
		vs[0].Cause == nil || vs[0].Cause.Event.Seq != 3 || vs[0].Cause.Subformula != byID["no-env-writes"].Text {
		t.Errorf("deny verdict %+v", vs)
	}
	vs = f.add(schema.TypeAction, toolCall(3, "payment.send", map[string]any{"amount": 5000}, map[string]any{"environment": "production"}))
	if len(vs) != 1 || vs[0].Rule.ID != "big-payments" || vs[0].Mode != schema.ModeSuspend {
		t.Errorf("require_approval verdict %+v", vs)
	}
	f.add(schema.TypeRunFinish, nil)
	res := map[string]string{}
	for _, r := range f.run.Results() {
		res[r.RuleID] = string(r.Outcome)
	}
	if res["no-env-writes"] != "fail" || res["big-payments"] != "fail" || res["docs-ok"] != "pass" || res["tests_before_commit"] != "not_applicable" {
		t.Errorf("results %v", res)
	}
}

// TestDecide: the decision combines POLICY.md with the deny/suspend temporal
// rules the step would violate, and changes nothing in the run.
func TestDecide(t *testing.T) {
	eng := guardrails(t)
	f := &feeder{t: t, run: eng.NewRun("r")}
	f.add(schema.TypeRunStart, nil)
	f.add(schema.TypeAction, &schema.Action{ID: 1, Type: "EditFile"})

	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return *p
	}
	check := func(name string, a *schema.Action, decision, rule, source string) {
		t.Helper()
		d := f.run.Decide(a)
		if string(d.Decision) != decision || str(d.Rule) != rule || str(d.Source) != source || d.Reason == "" {
			t.Errorf("%s: got %s %s %s (%s), want %s %s %s", name, d.Decision, str(d.Rule), str(d.Source), d.Reason, decision, rule, source)
		}
	}
	check("env write", toolCall(2, "file.write", map[string]any{"path": ".env"}, nil), "deny", "no-env-writes", "policy.md")
	check("docs write", toolCall(2, "file.write", map[string]any{"path": "docs/a.md"}, nil), "allow", "null", "null")
	check("payment", toolCall(2, "payment.send", map[string]any{"amount": 5000}, map[string]any{"environment": "production"}), "require_approval", "big-payments", "policy.md")
	check("commit before tests", &schema.Action{ID: 2, Type: "GitCommit"}, "deny", "tests_before_commit", "temporal")
	check("deploy unreviewed", &schema.Action{ID: 2, Type: "Deploy"}, "require_approval", "review_before_deploy", "temporal")
	check("observe-only rule never decides", &schema.Action{ID: 2, Type: "DeleteFile"}, "allow", "null", "null")

	// A violated deny rule keeps denying: the violating step counts as
	// blocked, and the next offending step is denied again.
	g := &feeder{t: t, run: eng.NewRun("g")}
	g.add(schema.TypeRunStart, nil)
	if vs := g.add(schema.TypeAction, &schema.Action{ID: 1, Type: "GitCommit"}); len(vs) != 1 || vs[0].Status != schema.StatusViolated {
		t.Fatalf("first untested commit: %v", vs)
	}
	if d := g.run.Decide(&schema.Action{ID: 2, Type: "GitCommit"}); d.Decision != policymd.Deny {
		t.Errorf("second untested commit: %s", d.Decision)
	}
	g.add(schema.TypeAction, &schema.Action{ID: 2, Type: "RunTests", Status: "completed"})
	if d := g.run.Decide(&schema.Action{ID: 3, Type: "GitCommit"}); d.Decision != policymd.Allow {
		t.Errorf("commit after tests: %s %s", d.Decision, d.Reason)
	}

	// Deciding changed nothing: the commit really arriving now violates.
	vs := f.add(schema.TypeAction, &schema.Action{ID: 2, Type: "RunTests", Status: "completed"})
	if len(vs) != 0 {
		t.Errorf("tests produced verdicts %v", vs)
	}
	check("commit after tests", &schema.Action{ID: 3, Type: "GitCommit"}, "allow", "null", "null")
	if d := f.run.Decide(toolCall(3, "payment.send", map[string]any{"amount": 5}, map[string]any{"environment": "production"})); d.Decision != policymd.Allow {
		t.Errorf("small payment %v", d)
	}
	vs = f.add(schema.TypeAction, &schema.Action{ID: 3, Type: "GitCommit"})
	if len(vs) != 0 {
		t.Errorf("commit after tests produced %v", vs)
	}
}
