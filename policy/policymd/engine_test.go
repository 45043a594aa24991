package policymd

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/ponens/ponens/schema"
)

// rule builds a rule for engine tests.
func rule(id, capability string, action Action, priority float64, c *Condition) Rule {
	return Rule{ID: id, Capability: capability, Action: action, Priority: priority, Condition: c, Reason: "reason " + id}
}

func pol(name string, rules ...Rule) *Policy {
	return &Policy{Name: name, File: name + "/POLICY.md", Scope: ScopeProject, AppliesTo: []string{"all"}, Severity: SeverityBlock, Rules: rules}
}

func TestEnginePriority(t *testing.T) {
	amountOver := func(n float64) *Condition {
		return &Condition{Field: field("payload.amount", OpGt, n)}
	}
	tests := []struct {
		name     string
		policies []*Policy
		in       Intent
		want     Decision
	}{
		{
			name:     "no rules: default allow",
			policies: []*Policy{pol("p")},
			in:       Intent{Capability: "file.write"},
			want:     Decision{Action: Allow, Reason: DefaultReason},
		},
		{
			name:     "no matching capability: default allow",
			policies: []*Policy{pol("p", rule("r", "payment.*", Deny, 0, nil))},
			in:       Intent{Capability: "file.write"},
			want:     Decision{Action: Allow, Reason: DefaultReason},
		},
		{
			name:     "capability matches but condition false: default allow",
			policies: []*Policy{pol("p", rule("r", "payment.*", Deny, 0, amountOver(100)))},
			in:       Intent{Capability: "payment.send", Payload: map[string]any{"amount": 5.0}},
			want:     Decision{Action: Allow, Reason: DefaultReason},
		},
		{
			name: "highest priority wins over load order",
			policies: []*Policy{pol("p",
				rule("low", "payment.*", Deny, 1, nil),
				rule("high", "payment.send", Allow, 5, nil),
				rule("mid", "*", RequireApproval, 3, nil),
			)},
			in:   Intent{Capability: "payment.send"},
			want: Decision{Action: Allow, RuleID: "high", Reason: "reason high", Policy: "p", File: "p/POLICY.md", Severity: SeverityBlock},
		},
		{
			name: "tie: the first in load order wins",
			policies: []*Policy{pol("p",
				rule("first", "payment.*", Allow, 2, nil),
				rule("second", "payment.send", Deny, 2, nil),
			)},
			in:   Intent{Capability: "payment.send"},
			want: Decision{Action: Allow, RuleID: "first", Reason: "reason first", Policy: "p", File: "p/POLICY.md", Severity: SeverityBlock},
		},
		{
			name: "tie across policies: the earlier policy wins",
			policies: []*Policy{
				pol("a", rule("a1", "payment.send", RequireApproval, 0, nil)),
				pol("b", rule("b1", "payment.send", Deny, 0, nil)),
			},
			in:   Intent{Capability: "payment.send"},
			want: Decision{Action: RequireApproval, RuleID: "a1", Reason: "reason a1", Policy: "a", File: "a/POLICY.md", Severity: SeverityBlock},
		},
		{
			name: "priority across policies",
			policies: []*Policy{
				pol("a", rule("a1", "payment.send", RequireApproval, 0, nil)),
				pol("b", rule("b1", "payment.send", Deny, 0.5, nil)),
			},
			in:   Intent{Capability: "payment.send"},
			want: Decision{Action: Deny, RuleID: "b1", Reason: "reason b1", Policy: "b", File: "b/POLICY.md", Severity: SeverityBlock},
		},
		{
			name: "negative priority loses to default-priority rules",
			policies: []*Policy{pol("p",
				rule("neg", "*", Deny, -1, nil),
				rule("zero", "*", Allow, 0, nil),
			)},
			in:   Intent{Capability: "x"},
			want: Decision{Action: Allow, RuleID: "zero", Reason: "reason zero", Policy: "p", File: "p/POLICY.md", Severity: SeverityBlock},
		},
		{
			name: "only rules whose condition holds compete",
			policies: []*Policy{pol("p",
				rule("big", "payment.*", Deny, 10, amountOver(1000)),
				rule("any", "payment.*", RequireApproval, 0, nil),
			)},
			in:   Intent{Capability: "payment.send", Payload: map[string]any{"amount": 10.0}},
			want: Decision{Action: RequireApproval, RuleID: "any", Reason: "reason any", Policy: "p", File: "p/POLICY.md", Severity: SeverityBlock},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewEngine(tt.policies).Decide(&tt.in)
			if (got.Rule == nil) != (tt.want.RuleID == "") || got.Rule != nil && got.Rule.ID != got.RuleID {
				t.Errorf("Rule %+v does not go with RuleID %q", got.Rule, got.RuleID)
			}
			got.Rule = nil
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEngineReasonAndSeverity(t *testing.T) {
	p := pol("p", Rule{ID: "r", Capability: "*", Action: Deny, Description: "described"})
	p.Severity = SeverityWarn
	d := NewEngine([]*Policy{p}).Decide(&Intent{Capability: "x"})
	if d.Reason != "described" || d.Severity != SeverityWarn || d.Action != Deny {
		t.Errorf("decision %+v: want the description as reason, severity warn, action unchanged deny", d)
	}
}

// TestEngineAppliesTo: scoped policies (skill-attached or appliesTo) apply
// only to intents whose workerId or specialist they name.
func TestEngineAppliesTo(t *testing.T) {
	skill := pol("deploy-guard", rule("no-prod", "deploy.*", Deny, 0, nil))
	skill.Scope, skill.AppliesTo = ScopeSkill, []string{"deploy"}
	e := NewEngine([]*Policy{skill})
	tests := []struct {
		in   Intent
		want Action
	}{
		{Intent{Capability: "deploy.run", WorkerID: "deploy"}, Deny},
		{Intent{Capability: "deploy.run", Specialist: "deploy"}, Deny},
		{Intent{Capability: "deploy.run", WorkerID: "coder", Specialist: "reviewer"}, Allow},
		{Intent{Capability: "deploy.run"}, Allow},
	}
	for _, tt := range tests {
		if got := e.Decide(&tt.in).Action; got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.in, got, tt.want)
		}
	}
	skill.AppliesTo = []string{"deploy", "all"}
	if got := e.Decide(&Intent{Capability: "deploy.run"}).Action; got != Deny {
		t.Errorf("appliesTo with all: %s", got)
	}
}

type fixed Decision

func (f fixed) Decide(*Intent) Decision { return Decision(f) }

// TestComposite is seed 004 §5 "Composite engines": deny > require_approval
// > allow; among equals the first engine's decision.
func TestComposite(t *testing.T) {
	allowA := fixed{Action: Allow, RuleID: "allow-a"}
	allowB := fixed{Action: Allow, RuleID: "allow-b"}
	askA := fixed{Action: RequireApproval, RuleID: "ask-a"}
	askB := fixed{Action: RequireApproval, RuleID: "ask-b"}
	denyA := fixed{Action: Deny, RuleID: "deny-a"}
	denyB := fixed{Action: Deny, RuleID: "deny-b"}
	tests := []struct {
		name string
		c    Composite
		want string
	}{
		{"deny beats allow", Composite{allowA, denyA}, "deny-a"},
		{"deny beats approval", Composite{askA, denyA}, "deny-a"},
		{"approval beats allow", Composite{allowA, askA}, "ask-a"},
		{"deny first", Composite{denyA, askA, allowA}, "deny-a"},
		{"equal deny: first", Composite{denyA, denyB}, "deny-a"},
		{"equal approval: first", Composite{allowA, askB, askA}, "ask-b"},
		{"equal allow: first", Composite{allowB, allowA}, "allow-b"},
		{"single", Composite{askA}, "ask-a"},
	}
	for _, tt := range tests {
		if got := tt.c.Decide(&Intent{}); got.RuleID != tt.want {
			t.Errorf("%s: got %+v, want %s", tt.name, got, tt.want)
		}
	}
	if got := (Composite{}).Decide(&Intent{}); got.Action != Allow || got.RuleID != "" {
		t.Errorf("empty composite: %+v", got)
	}
	// Real engines compose too.
	e1 := NewEngine([]*Policy{pol("a", rule("a1", "*", Allow, 100, nil))})
	e2 := NewEngine([]*Policy{pol("b", rule("b1", "file.*", RequireApproval, 0, nil))})
	if got := (Composite{e1, e2}).Decide(&Intent{Capability: "file.write"}); got.RuleID != "b1" {
		t.Errorf("engines: %+v", got)
	}
}

func TestIntentFromAction(t *testing.T) {
	a := &schema.Action{
		ID: 42, Type: "tool_call", Capability: "shell.exec", ToolName: "bash", ConnectorID: "local",
		ActionType: "command", ActionClass: "execute", Reversibility: "conditional", Risk: "medium",
		WorkerID: "coder", Specialist: "backend", TaskID: "t-9",
		Payload:     json.RawMessage(`{"command": "git push --force", "argv": ["git", "push", "--force"]}`),
		Constraints: json.RawMessage(`{"environment": "production"}`),
		Requester:   json.RawMessage(`{"type": "user", "id": "u1"}`),
		Timestamp:   "2024-01-02T03:04:05.5Z",
	}
	got := IntentFromAction("run-7", a)
	want := Intent{
		ID: "42", WorkRunID: "run-7", TaskID: "t-9", WorkerID: "coder", Specialist: "backend",
		ActionType: "command", Capability: "shell.exec", ToolName: "bash", ConnectorID: "local",
		ActionClass: "execute", Reversibility: "conditional", RiskLevel: "medium",
		Payload:     map[string]any{"command": "git push --force", "argv": []any{"git", "push", "--force"}},
		Constraints: map[string]any{"environment": "production"},
		Requester:   map[string]any{"type": "user", "id": "u1"},
		CreatedAt:   1704164645500,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if v, ok := got.Resolve("payload.argv.2"); !ok || v != "--force" {
		t.Errorf("payload.argv.2 = %v %v", v, ok)
	}
	bad := IntentFromAction("r", &schema.Action{Payload: json.RawMessage(`[1]`), Timestamp: "yesterday"})
	if bad.Payload != nil || bad.CreatedAt != 0 || bad.ID != "0" {
		t.Errorf("non-object payload / bad timestamp: %+v", bad)
	}
}

// TestIntentJSON: the JSON names are those of the ActionIntent interface.
func TestIntentJSON(t *testing.T) {
	in := Intent{ID: "i", WorkRunID: "w", TaskID: "t", WorkerSessionID: "s", WorkerID: "wk", Specialist: "sp",
		ActionType: "tool", Capability: "c", ToolName: "tn", ConnectorID: "cn", ActionClass: "read",
		Reversibility: "reversible", RiskLevel: "low", Payload: map[string]any{}, Constraints: map[string]any{"environment": "dev"},
		Requester: map[string]any{}, CreatedAt: 1}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	want := []string{"actionClass", "actionType", "capability", "connectorId", "constraints", "createdAt", "id", "payload",
		"requester", "reversibility", "riskLevel", "specialist", "taskId", "toolName", "workRunId", "workerId", "workerSessionId"}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v\nwant %v", keys, want)
	}
}
