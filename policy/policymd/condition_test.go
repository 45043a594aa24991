package policymd

import (
	"encoding/json"
	"testing"
)

// testIntent is an intent with a bit of everything, decoded from JSON as a
// runtime would.
func testIntent(t testing.TB) *Intent {
	t.Helper()
	var in Intent
	err := json.Unmarshal([]byte(`{
		"id": "a1", "workRunId": "run-1", "workerId": "payment-bot", "specialist": "finance",
		"actionType": "tool", "capability": "payment.send", "toolName": "stripe",
		"actionClass": "write", "reversibility": "irreversible", "riskLevel": "high",
		"payload": {
			"amount": 1500, "ratio": 0.5, "currency": "EUR", "memo": "refund for order 7",
			"tags": ["urgent", "secret", 3], "files": [{"name": "a", "size": 1}, "b.txt"],
			"nothing": null, "flag": true, "nested": {"deep": {"x": "y"}}, "zero": 0, "empty": ""
		},
		"constraints": {"environment": "production", "maxAmount": 2000},
		"requester": {"type": "user", "id": "u1", "tenantId": "t1"},
		"createdAt": 1700000000000
	}`), &in)
	if err != nil {
		t.Fatal(err)
	}
	return &in
}

func field(path string, op Op, value any) *FieldCondition {
	return &FieldCondition{Path: path, Op: op, Value: value, HasValue: true}
}

func fieldValues(path string, op Op, values ...any) *FieldCondition {
	return &FieldCondition{Path: path, Op: op, Values: values, HasValues: true}
}

func fieldNone(path string, op Op) *FieldCondition { return &FieldCondition{Path: path, Op: op} }

func TestOperators(t *testing.T) {
	in := testIntent(t)
	tests := []struct {
		name string
		f    *FieldCondition
		want bool
	}{
		// eq: strict equality, numbers by value, no coercion.
		{"eq string", field("payload.currency", OpEq, "EUR"), true},
		{"eq string other", field("payload.currency", OpEq, "USD"), false},
		{"eq number", field("payload.amount", OpEq, 1500.0), true},
		{"eq int value vs json number", field("payload.amount", OpEq, 1500), true},
		{"eq 1 == 1.0", field("constraints.maxAmount", OpEq, 2000.0), true},
		{"eq no coercion number/string", field("payload.amount", OpEq, "1500"), false},
		{"eq no coercion bool/string", field("payload.flag", OpEq, "true"), false},
		{"eq bool", field("payload.flag", OpEq, true), true},
		{"eq zero vs false", field("payload.zero", OpEq, false), false},
		{"eq empty vs zero", field("payload.empty", OpEq, 0), false},
		{"eq null", field("payload.nothing", OpEq, nil), true},
		{"eq undefined vs null", field("payload.missing", OpEq, nil), false},
		{"eq undefined", field("payload.missing", OpEq, "x"), false},
		{"eq array deep", field("payload.tags", OpEq, []any{"urgent", "secret", 3}), true},
		{"eq array order", field("payload.tags", OpEq, []any{"secret", "urgent", 3}), false},
		{"eq object deep", field("payload.files.0", OpEq, map[string]any{"name": "a", "size": 1}), true},
		{"eq object other", field("payload.files.0", OpEq, map[string]any{"name": "a"}), false},
		{"eq top-level", field("workerId", OpEq, "payment-bot"), true},
		{"eq case-sensitive", field("workerId", OpEq, "Payment-Bot"), false},
		// neq: the negation of eq.
		{"neq other", field("payload.currency", OpNeq, "USD"), true},
		{"neq same", field("payload.currency", OpNeq, "EUR"), false},
		{"neq no coercion", field("payload.amount", OpNeq, "1500"), true},
		{"neq undefined", field("payload.missing", OpNeq, "x"), true},
		{"neq null vs null", field("payload.nothing", OpNeq, nil), false},
		// gt, gte, lt, lte: numbers only.
		{"gt true", field("payload.amount", OpGt, 1000), true},
		{"gt equal", field("payload.amount", OpGt, 1500), false},
		{"gt false", field("payload.amount", OpGt, 2000), false},
		{"gt fraction", field("payload.ratio", OpGt, 0.25), true},
		{"gt string field", field("payload.currency", OpGt, 1), false},
		{"gt string value", field("payload.amount", OpGt, "1000"), false},
		{"gt null field", field("payload.nothing", OpGt, -1), false},
		{"gt undefined", field("payload.missing", OpGt, -1), false},
		{"gt bool field", field("payload.flag", OpGt, 0), false},
		{"gte equal", field("payload.amount", OpGte, 1500), true},
		{"gte less", field("payload.amount", OpGte, 1501), false},
		{"gte string", field("payload.memo", OpGte, 0), false},
		{"lt true", field("payload.amount", OpLt, 1501), true},
		{"lt equal", field("payload.amount", OpLt, 1500), false},
		{"lt string", field("payload.memo", OpLt, 1e9), false},
		{"lte equal", field("payload.amount", OpLte, 1500), true},
		{"lte more", field("payload.amount", OpLte, 1499.5), false},
		{"lte array", field("payload.tags", OpLte, 10), false},
		{"createdAt", field("createdAt", OpGt, 1e12), true},
		// includes: array elements (by eq) or substrings.
		{"includes array", field("payload.tags", OpIncludes, "secret"), true},
		{"includes array number", field("payload.tags", OpIncludes, 3.0), true},
		{"includes array no coercion", field("payload.tags", OpIncludes, "3"), false},
		{"includes array missing", field("payload.tags", OpIncludes, "sec"), false},
		{"includes array object", field("payload.files", OpIncludes, map[string]any{"name": "a", "size": 1.0}), true},
		{"includes substring", field("payload.memo", OpIncludes, "order"), true},
		{"includes substring missing", field("payload.memo", OpIncludes, "Order"), false},
		{"includes empty substring", field("payload.memo", OpIncludes, ""), true},
		{"includes number in string", field("payload.memo", OpIncludes, 7), false},
		{"includes on number", field("payload.amount", OpIncludes, 1), false},
		{"includes undefined", field("payload.missing", OpIncludes, "x"), false},
		// in, notIn: membership in values.
		{"in", fieldValues("payload.currency", OpIn, "USD", "EUR"), true},
		{"in not", fieldValues("payload.currency", OpIn, "USD", "GBP"), false},
		{"in number", fieldValues("payload.amount", OpIn, 1, 1500), true},
		{"in no coercion", fieldValues("payload.amount", OpIn, "1500"), false},
		{"in undefined", fieldValues("payload.missing", OpIn, "x"), false},
		{"in null", fieldValues("payload.nothing", OpIn, nil), true},
		{"in empty list", fieldValues("payload.currency", OpIn), false},
		{"in risk alias", fieldValues("risk", OpIn, "high", "critical"), true},
		{"notIn", fieldValues("payload.currency", OpNotIn, "USD", "GBP"), true},
		{"notIn member", fieldValues("payload.currency", OpNotIn, "EUR"), false},
		{"notIn undefined", fieldValues("payload.missing", OpNotIn, "x"), true},
		{"notIn empty list", fieldValues("payload.currency", OpNotIn), true},
		// exists, notExists: defined and not null.
		{"exists", fieldNone("payload.amount", OpExists), true},
		{"exists zero", fieldNone("payload.zero", OpExists), true},
		{"exists empty string", fieldNone("payload.empty", OpExists), true},
		{"exists false", fieldNone("payload.flag", OpExists), true},
		{"exists null", fieldNone("payload.nothing", OpExists), false},
		{"exists undefined", fieldNone("payload.missing", OpExists), false},
		{"exists object", fieldNone("payload.nested", OpExists), true},
		{"exists unset optional top-level", fieldNone("connectorId", OpExists), false},
		{"notExists", fieldNone("payload.missing", OpNotExists), true},
		{"notExists null", fieldNone("payload.nothing", OpNotExists), true},
		{"notExists defined", fieldNone("payload.amount", OpNotExists), false},
		{"notExists unset top-level", fieldNone("taskId", OpNotExists), true},
		// wildcard: always true.
		{"wildcard", fieldNone("payload.amount", OpWildcard), true},
		{"wildcard undefined", fieldNone("payload.missing", OpWildcard), true},
		{"wildcard unknown root", fieldNone("nowhere", OpWildcard), true},
		// Malformed conditions are false.
		{"unknown op", field("payload.amount", Op("equals"), 1500), false},
		{"eq without value", fieldNone("payload.amount", OpEq), false},
		{"neq without value", fieldNone("payload.amount", OpNeq), false},
		{"in without values", fieldNone("payload.amount", OpIn), false},
		{"notIn without values", fieldNone("payload.amount", OpNotIn), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Eval(in); got != tt.want {
				t.Errorf("%s %s %v/%v = %v, want %v", tt.f.Path, tt.f.Op, tt.f.Value, tt.f.Values, got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	in := testIntent(t)
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"payload.amount", 1500.0, true},
		{"payload.nested.deep.x", "y", true},
		{"payload.files.0.name", "a", true},
		{"payload.files.1", "b.txt", true},
		{"payload.files.2", nil, false},
		{"payload.files.-1", nil, false},
		{"payload.files.01", nil, false},
		{"payload.files.x", nil, false},
		{"payload.memo.0", nil, false},
		{"payload.nothing", nil, true},
		{"payload.nothing.x", nil, false},
		{"payload.missing", nil, false},
		{"constraints.environment", "production", true},
		{"requester.tenantId", "t1", true},
		{"risk", "high", true},
		{"riskLevel", "high", true},
		{"actionType", "tool", true},
		{"actionClass", "write", true},
		{"reversibility", "irreversible", true},
		{"capability", "payment.send", true},
		{"specialist", "finance", true},
		{"workerId", "payment-bot", true},
		{"toolName", "stripe", true},
		{"connectorId", nil, false},
		{"id", "a1", true},
		{"workRunId", "run-1", true},
		{"taskId", nil, false},
		{"workerSessionId", nil, false},
		{"createdAt", 1700000000000.0, true},
		{"capability.x", nil, false},
		{"createdAt.x", nil, false},
		{"unknown", nil, false},
		{"", nil, false},
		{"payload.", nil, false},
	}
	for _, tt := range tests {
		got, ok := in.Resolve(tt.path)
		if ok != tt.ok || !equal(got, tt.want) {
			t.Errorf("Resolve(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	if m, ok := in.Resolve("payload"); !ok || len(m.(map[string]any)) == 0 {
		t.Errorf("Resolve(payload) = %v, %v", m, ok)
	}
	var empty Intent
	if _, ok := empty.Resolve("payload.x"); ok {
		t.Error("Resolve on a nil payload is defined")
	}
}

// TestResolveGoValues: payloads built in Go (not decoded from JSON) compare
// as their JSON counterparts.
func TestResolveGoValues(t *testing.T) {
	n := 7
	in := &Intent{Payload: map[string]any{
		"argv":   []string{"git", "push"},
		"count":  int64(3),
		"ptr":    &n,
		"labels": map[string]string{"env": "prod"},
		"raw":    json.Number("12.5"),
		"f32":    float32(0.5),
	}}
	tests := []struct {
		f    *FieldCondition
		want bool
	}{
		{field("payload.argv.1", OpEq, "push"), true},
		{field("payload.argv", OpIncludes, "git"), true},
		{field("payload.argv", OpEq, []any{"git", "push"}), true},
		{field("payload.count", OpEq, 3.0), true},
		{field("payload.count", OpGt, 2), true},
		{field("payload.ptr", OpEq, 7), true},
		{field("payload.labels.env", OpEq, "prod"), true},
		{field("payload.raw", OpGte, 12.5), true},
		{field("payload.f32", OpEq, 0.5), true},
	}
	for _, tt := range tests {
		if got := tt.f.Eval(in); got != tt.want {
			t.Errorf("%s %s %v = %v, want %v", tt.f.Path, tt.f.Op, tt.f.Value, got, tt.want)
		}
	}
}

func TestCompoundConditions(t *testing.T) {
	in := testIntent(t)
	yes := &Condition{Field: fieldNone("payload.amount", OpExists)}
	no := &Condition{Field: fieldNone("payload.missing", OpExists)}
	tests := []struct {
		name string
		c    *Condition
		want bool
	}{
		{"nil", nil, true},
		{"zero", &Condition{}, true},
		{"and all", &Condition{And: []*Condition{yes, yes}}, true},
		{"and one false", &Condition{And: []*Condition{yes, no}}, false},
		{"and empty", &Condition{And: []*Condition{}}, true},
		{"or one", &Condition{Or: []*Condition{no, yes}}, true},
		{"or none", &Condition{Or: []*Condition{no, no}}, false},
		{"or empty", &Condition{Or: []*Condition{}}, false},
		{"not true", &Condition{Not: yes}, false},
		{"not false", &Condition{Not: no}, true},
		{"nested", &Condition{And: []*Condition{{Or: []*Condition{no, yes}}, {Not: no}}}, true},
	}
	for _, tt := range tests {
		if got := tt.c.Eval(in); got != tt.want {
			t.Errorf("%s: Eval = %v, want %v", tt.name, got, tt.want)
		}
	}
}
