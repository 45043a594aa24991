package policymd

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse runs the parser and validator on arbitrary files. It must never
// panic (a recovered panic shows as an internal-error problem), must be
// deterministic, must report problems sorted with positions inside the
// file, and what it accepts must render and evaluate.
func FuzzParse(f *testing.F) {
	f.Add([]byte(seedExample))
	f.Add([]byte("---\nname: x\n---\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := bytes.Count(src, []byte("\n")) + 1
		lenientOK := false
		for _, strict := range []bool{false, true} {
			opts := Options{Strict: strict}
			p, err := Parse("f.md", src, opts)
			p2, err2 := Parse("f.md", src, opts)
			if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
				t.Fatalf("not deterministic: %v / %v", err, err2)
			}
			if err != nil {
				ps, ok := err.(Problems)
				if !ok || len(ps) == 0 {
					t.Fatalf("error is not Problems: %#v", err)
				}
				for i, pr := range ps {
					if pr.Code == CodeInternal {
						t.Fatalf("parser panicked: %s", pr)
					}
					if pr.Line < 1 || pr.Line > lines || pr.Col < 1 {
						t.Errorf("position outside the file (%d lines): %s", lines, pr)
					}
					if i > 0 && (ps[i-1].Line > pr.Line || (ps[i-1].Line == pr.Line && ps[i-1].Col > pr.Col)) {
						t.Errorf("problems not sorted: %s before %s", ps[i-1], pr)
					}
				}
				continue
			}
			if !hasNonFinite(p) && !reflect.DeepEqual(p, p2) {
				t.Fatal("not deterministic: two parses differ")
			}
			if strict && !lenientOK {
				t.Fatal("strict mode accepted a file lenient mode refused")
			}
			lenientOK = true
			checkValidPolicy(t, p)
		}
	})
}

// checkValidPolicy checks what Parse promises about a valid policy and runs
// it through every consumer.
func checkValidPolicy(t *testing.T, p *Policy) {
	t.Helper()
	if checkName(p.Name) != "" || checkEnum("scope", string(p.Scope), scopes) != "" || checkEnum("severity", string(p.Severity), severities) != "" || len(p.AppliesTo) == 0 {
		t.Fatalf("invalid policy accepted: %+v", p)
	}
	ids := map[string]bool{}
	for _, r := range p.Rules {
		if r.ID == "" || CheckCapabilityPattern(r.Capability) != nil || checkEnum("action", string(r.Action), actions) != "" {
			t.Fatalf("invalid rule accepted: %+v", r)
		}
		if !r.GeneratedID {
			if ids[r.ID] {
				t.Fatalf("duplicate rule id %q accepted", r.ID)
			}
			ids[r.ID] = true
		}
	}
	pols := []*Policy{p}
	_ = BuildPoliciesContext(pols)
	_ = BuildAgentPoliciesContext(pols, "agent")
	_ = ToCodexExecpolicy(pols)
	_ = ToCodexGuardianPrompt(pols)
	if _, err := json.Marshal(p); err != nil && !hasNonFinite(p) {
		t.Fatalf("policy does not marshal: %v", err)
	}
	in := &Intent{Capability: "file.write", WorkerID: "agent", Payload: map[string]any{"path": ".env", "amount": 5.0, "command": "git push"}}
	d := NewEngine(pols).Decide(in)
	if severityRank(d.Action) == 0 {
		t.Fatalf("decision with no action: %+v", d)
	}
}

// hasNonFinite reports whether a policy holds an infinite or NaN value,
// which encoding/json refuses.
func hasNonFinite(p *Policy) bool {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case float64:
			return math.IsInf(x, 0) || math.IsNaN(x)
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	var cond func(c *Condition) bool
	cond = func(c *Condition) bool {
		if c == nil {
			return false
		}
		if c.Field != nil && (walk(c.Field.Value) || walk(c.Field.Values)) {
			return true
		}
		for _, s := range append(append([]*Condition{c.Not}, c.And...), c.Or...) {
			if cond(s) {
				return true
			}
		}
		return false
	}
	for _, r := range p.Rules {
		if cond(r.Condition) {
			return true
		}
	}
	return false
}

// parseCondition decodes a condition written in YAML (or JSON) as the
// frontmatter decoder does.
func parseCondition(src []byte) (*Condition, Problems) {
	var doc yaml.Node
	if err := safeUnmarshal(src, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, Problems{{Code: CodeYAMLSyntax}}
	}
	d := &decoder{file: "c", budget: maxNodes}
	c := d.condition(doc.Content[0], 1)
	return c, d.probs
}

// FuzzCondition evaluates arbitrary conditions over arbitrary intents: no
// panic, and the operators keep their algebra (neq is not eq, notIn is not
// in, notExists is not exists, not negates, wildcard holds, comparisons are
// false on non-numbers).
func FuzzCondition(f *testing.F) {
	f.Add([]byte(`{field: {path: payload.amount, op: gt, value: 1000}}`), []byte(`{"payload": {"amount": 1500}}`))
	f.Add([]byte(`{or: [{field: {path: workerId, op: eq, value: bot}}, {not: {field: {path: risk, op: in, values: [high]}}}]}`), []byte(`{"workerId": "bot", "riskLevel": "high"}`))
	f.Fuzz(func(t *testing.T, condSrc, intentSrc []byte) {
		var in Intent
		if err := json.Unmarshal(intentSrc, &in); err != nil {
			var payload map[string]any
			if json.Unmarshal(intentSrc, &payload) != nil {
				return
			}
			in = Intent{Payload: payload}
		}
		c, _ := parseCondition(condSrc)
		if c == nil {
			return
		}
		got := c.Eval(&in)
		if (&Condition{Not: c}).Eval(&in) == got {
			t.Fatal("not does not negate")
		}
		_ = describeCondition(c)
		_, _ = conditionPrefixes(c)
		var walk func(c *Condition)
		walk = func(c *Condition) {
			if c == nil {
				return
			}
			if f := c.Field; f != nil {
				checkOperatorAlgebra(t, f, &in)
			}
			walk(c.Not)
			for _, s := range c.And {
				walk(s)
			}
			for _, s := range c.Or {
				walk(s)
			}
		}
		walk(c)
	})
}

func checkOperatorAlgebra(t *testing.T, f *FieldCondition, in *Intent) {
	t.Helper()
	with := func(op Op) bool {
		g := *f
		g.Op = op
		return g.Eval(in)
	}
	if with(OpWildcard) != true {
		t.Fatal("wildcard is false")
	}
	if with(OpExists) == with(OpNotExists) {
		t.Fatalf("exists == notExists for %s", f.Path)
	}
	if f.HasValue && with(OpEq) == with(OpNeq) {
		t.Fatalf("eq == neq for %s %v", f.Path, f.Value)
	}
	if f.HasValues && with(OpIn) == with(OpNotIn) {
		t.Fatalf("in == notIn for %s %v", f.Path, f.Values)
	}
	got, ok := in.Resolve(f.Path)
	a, aok := number(got)
	b, bok := number(f.Value)
	numeric := ok && aok && bok && !math.IsNaN(a) && !math.IsNaN(b)
	if !numeric {
		for _, op := range []Op{OpGt, OpGte, OpLt, OpLte} {
			if with(op) && !(ok && aok && bok) {
				t.Fatalf("%s true on non-numbers %v, %v", op, got, f.Value)
			}
		}
		return
	}
	if with(OpGt) == with(OpLte) || with(OpLt) == with(OpGte) {
		t.Fatalf("comparisons inconsistent for %v and %v", a, b)
	}
	if with(OpEq) != (a == b) {
		t.Fatalf("eq on numbers %v, %v", a, b)
	}
}
