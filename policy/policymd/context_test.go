package policymd

import (
	"path/filepath"
	"testing"
)

// goldenPolicies loads the testdata/golden/wd tree.
func goldenPolicies(t *testing.T) []*Policy {
	t.Helper()
	pols, err := Load(filepath.Join("testdata", "golden", "wd"), DiscoverOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pols) != 3 {
		t.Fatalf("loaded %d policies, want 3", len(pols))
	}
	return pols
}

// TestContextGolden is seed 004 §6: buildPoliciesContext and
// buildAgentPoliciesContext.
func TestContextGolden(t *testing.T) {
	pols := goldenPolicies(t)
	checkGolden(t, "testdata/golden/context.md", BuildPoliciesContext(pols))
	checkGolden(t, "testdata/golden/context-payment-bot.md", BuildAgentPoliciesContext(pols, "payment-bot"))
	checkGolden(t, "testdata/golden/context-deploy.md", BuildAgentPoliciesContext(pols, "deploy"))
	checkGolden(t, "testdata/golden/context-nobody.md", BuildAgentPoliciesContext(pols, "nobody"))
	if got := BuildPoliciesContext(nil); got != "" {
		t.Errorf("no policies: %q", got)
	}
}

func TestDescribeCondition(t *testing.T) {
	yes := &Condition{Field: fieldNone("payload.a", OpExists)}
	tests := []struct {
		c    *Condition
		want string
	}{
		{nil, "always"},
		{&Condition{Field: field("payload.path", OpIncludes, ".env")}, `payload.path includes ".env"`},
		{&Condition{Field: field("payload.n", OpGt, 1000.0)}, `payload.n > 1000`},
		{&Condition{Field: field("payload.n", OpLte, 0.5)}, `payload.n <= 0.5`},
		{&Condition{Field: field("payload.n", OpEq, nil)}, `payload.n is null`},
		{&Condition{Field: field("payload.s", OpNeq, "<a&b>")}, `payload.s is not "<a&b>"`},
		{&Condition{Field: fieldValues("risk", OpIn, "high", "critical")}, `risk is one of ["high", "critical"]`},
		{&Condition{Field: fieldValues("risk", OpNotIn, "low")}, `risk is not one of ["low"]`},
		{&Condition{Field: fieldNone("payload.t", OpNotExists)}, `payload.t is not set`},
		{&Condition{Field: fieldNone("payload.t", OpWildcard)}, `always`},
		{&Condition{And: []*Condition{yes, {Or: []*Condition{yes, yes}}}}, `payload.a is set and (payload.a is set or payload.a is set)`},
		{&Condition{Or: []*Condition{yes, {And: []*Condition{yes, yes}}}}, `payload.a is set or (payload.a is set and payload.a is set)`},
		{&Condition{Not: yes}, `not (payload.a is set)`},
		{&Condition{Field: field("payload.o", OpEq, map[string]any{"a": 1.0})}, `payload.o is {"a":1}`},
	}
	for _, tt := range tests {
		if got := describeCondition(tt.c); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}
