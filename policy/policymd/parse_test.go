package policymd

import (
	"reflect"
	"strings"
	"testing"
)

// seedExample is the example file of seed 004 §1.
const seedExample = `---
name: project-guardrails
version: 1.0.0
scope: project
appliesTo: [all]
rules:
  - capability: file.write
    action: deny
    condition:
      field: { path: payload.path, op: includes, value: .env }
    reason: Never write .env or secret files
---

## Forbidden
- Never commit ` + "`.env`" + ` files or any file containing credentials.
`

func mustParse(t testing.TB, src string, opts Options) *Policy {
	t.Helper()
	p, err := Parse("POLICY.md", []byte(src), opts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

// TestSeedFileFormat is seed 004 §1: the example parses to its frontmatter
// and body, and its rule denies writing .env.
func TestSeedFileFormat(t *testing.T) {
	p := mustParse(t, seedExample, Options{Strict: true})
	want := &Policy{
		Name: "project-guardrails", Version: "1.0.0", Scope: ScopeProject,
		AppliesTo: []string{"all"}, Severity: SeverityBlock,
		Rules: []Rule{{
			ID: "project-guardrails#1", GeneratedID: true, Capability: "file.write", Action: Deny,
			Condition: &Condition{Field: &FieldCondition{Path: "payload.path", Op: OpIncludes, Value: ".env", HasValue: true, Pos: Pos{10, 14}}, Pos: Pos{10, 7}},
			Reason:    "Never write .env or secret files", Pos: Pos{7, 5},
		}},
		Body:     "\n## Forbidden\n- Never commit `.env` files or any file containing credentials.\n",
		BodyLine: 13,
		File:     "POLICY.md",
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
	e := NewEngine([]*Policy{p})
	d := e.Decide(&Intent{Capability: "file.write", Payload: map[string]any{"path": "config/.env"}})
	if d.Action != Deny || d.RuleID != "project-guardrails#1" || d.Reason != "Never write .env or secret files" {
		t.Errorf("writing .env: %+v", d)
	}
	if d := e.Decide(&Intent{Capability: "file.write", Payload: map[string]any{"path": "main.go"}}); d.Action != Allow {
		t.Errorf("writing main.go: %+v", d)
	}
}

// TestSeedConditions is the four condition examples of seed 004 §2.
func TestSeedConditions(t *testing.T) {
	examples := []struct {
		name, yaml string
		cases      []struct {
			in   Intent
			want bool
		}
	}{
		{"field", `
      field: { path: payload.path, op: includes, value: .env }`, []struct {
			in   Intent
			want bool
		}{
			{Intent{Payload: map[string]any{"path": ".env.local"}}, true},
			{Intent{Payload: map[string]any{"path": "src/main.go"}}, false},
			{Intent{}, false},
		}},
		{"and", `
      and:
        - field: { path: payload.amount, op: gt, value: 1000 }
        - field: { path: constraints.environment, op: eq, value: production }`, []struct {
			in   Intent
			want bool
		}{
			{Intent{Payload: map[string]any{"amount": 1001.0}, Constraints: map[string]any{"environment": "production"}}, true},
			{Intent{Payload: map[string]any{"amount": 1000.0}, Constraints: map[string]any{"environment": "production"}}, false},
			{Intent{Payload: map[string]any{"amount": 5000.0}, Constraints: map[string]any{"environment": "staging"}}, false},
			{Intent{Payload: map[string]any{"amount": "5000"}, Constraints: map[string]any{"environment": "production"}}, false},
		}},
		{"or", `
      or:
        - field: { path: workerId, op: eq, value: payment-bot }
        - field: { path: specialist, op: eq, value: payment-bot }`, []struct {
			in   Intent
			want bool
		}{
			{Intent{WorkerID: "payment-bot"}, true},
			{Intent{Specialist: "payment-bot"}, true},
			{Intent{WorkerID: "coder", Specialist: "reviewer"}, false},
		}},
		{"not", `
      not:
        field: { path: constraints.environment, op: eq, value: development }`, []struct {
			in   Intent
			want bool
		}{
			{Intent{Constraints: map[string]any{"environment": "production"}}, true},
			{Intent{Constraints: map[string]any{"environment": "development"}}, false},
			{Intent{}, true},
		}},
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			src := "---\nname: seed-conditions\nrules:\n  - capability: \"*\"\n    action: deny\n    condition:" + ex.yaml + "\n---\n"
			p := mustParse(t, src, Options{Strict: true})
			c := p.Rules[0].Condition
			for i, tc := range ex.cases {
				if got := c.Eval(&tc.in); got != tc.want {
					t.Errorf("case %d: Eval = %v, want %v", i, got, tc.want)
				}
			}
		})
	}
}

// TestDefaults is seed 004 §2's defaults: scope project, appliesTo [all],
// severity block, priority 0, no rules, generated rule ids.
func TestDefaults(t *testing.T) {
	p := mustParse(t, "---\nname: minimal\n---\n", Options{})
	if p.Scope != ScopeProject || !reflect.DeepEqual(p.AppliesTo, []string{"all"}) || p.Severity != SeverityBlock || len(p.Rules) != 0 {
		t.Errorf("defaults: %+v", p)
	}
	p = mustParse(t, `---
name: ids
rules:
  - capability: a
    action: allow
  - id: explicit
    capability: b
    action: deny
    priority: 3
  - capability: c
    action: require_approval
---
`, Options{})
	var ids []string
	for _, r := range p.Rules {
		ids = append(ids, r.ID)
	}
	if want := []string{"ids#1", "explicit", "ids#3"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	if p.Rules[0].Priority != 0 || p.Rules[1].Priority != 3 || p.Rules[1].GeneratedID || !p.Rules[2].GeneratedID {
		t.Errorf("rules: %+v", p.Rules)
	}
}

func TestFrontmatterSplitting(t *testing.T) {
	tests := []struct {
		name, src, body string
		bodyLine        int
	}{
		{"no body", "---\nname: x\n---", "", 4},
		{"no body newline", "---\nname: x\n---\n", "", 4},
		{"body kept verbatim", "---\nname: x\n---\n\n# T\n\n  text  \n", "\n# T\n\n  text  \n", 4},
		{"crlf", "---\r\nname: x\r\n---\r\nbody\r\n", "body\r\n", 4},
		{"bom", "\xef\xbb\xbf---\nname: x\n---\nbody", "body", 4},
		{"trailing spaces on delimiters", "--- \nname: x\n---\t\nbody", "body", 4},
		{"later --- in body", "---\nname: x\n---\na\n---\nb\n", "a\n---\nb\n", 4},
		{"longer frontmatter", "---\nname: x\ndescription: y\n\n---\nz", "z", 6},
	}
	for _, tt := range tests {
		p, err := Parse("f", []byte(tt.src), Options{})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if p.Name != "x" || p.Body != tt.body || p.BodyLine != tt.bodyLine {
			t.Errorf("%s: name %q body %q line %d; want body %q line %d", tt.name, p.Name, p.Body, p.BodyLine, tt.body, tt.bodyLine)
		}
	}
	for _, bad := range []string{"", "name: x\n", " ---\nname: x\n---\n", "----\nname: x\n---\n", "---\nname: x\n"} {
		if _, err := Parse("f", []byte(bad), Options{}); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

// TestStrict: unknown fields are ignored unless Options.Strict or the
// frontmatter's strict: true.
func TestStrict(t *testing.T) {
	src := "---\nname: x\nowner: me\nrules:\n  - capability: a\n    action: deny\n    tag: 1\n---\n"
	if _, err := Parse("f", []byte(src), Options{}); err != nil {
		t.Errorf("lenient: %v", err)
	}
	want := "f:3:1: unknown-field: unknown field \"owner\" in the frontmatter\nf:7:5: unknown-field: unknown field \"tag\" in the rule"
	if _, err := Parse("f", []byte(src), Options{Strict: true}); err == nil || err.Error() != want {
		t.Errorf("Options.Strict: got\n%v\nwant\n%s", err, want)
	}
	inFile := strings.Replace(src, "name: x\n", "name: x\nstrict: true\n", 1)
	want = "f:4:1: unknown-field: unknown field \"owner\" in the frontmatter\nf:8:5: unknown-field: unknown field \"tag\" in the rule"
	if _, err := Parse("f", []byte(inFile), Options{}); err == nil || err.Error() != want {
		t.Errorf("strict: true: got\n%v\nwant\n%s", err, want)
	}
	off := strings.Replace(src, "name: x\n", "name: x\nstrict: false\n", 1)
	p, err := Parse("f", []byte(off), Options{})
	if err != nil || p.Strict {
		t.Errorf("strict: false: %v %+v", err, p)
	}
	if _, err := Parse("f", []byte(off), Options{Strict: true}); err == nil {
		t.Error("strict: false in the file overrode Options.Strict")
	}
}

// TestValues: YAML values become the JSON-like values conditions compare.
func TestValues(t *testing.T) {
	p := mustParse(t, `---
name: values
rules:
  - capability: a
    action: deny
    condition:
      field:
        path: payload.x
        op: eq
        value: {s: str, i: 3, f: 1.5, h: 0x10, b: true, n: null, l: [1, two], t: 2001-12-14, q: "3"}
---
`, Options{})
	want := map[string]any{"s": "str", "i": 3.0, "f": 1.5, "h": 16.0, "b": true, "n": nil, "l": []any{1.0, "two"}, "t": "2001-12-14", "q": "3"}
	if got := p.Rules[0].Condition.Field.Value; !reflect.DeepEqual(got, want) {
		t.Errorf("value = %#v\nwant    %#v", got, want)
	}
}

func TestAliases(t *testing.T) {
	p := mustParse(t, `---
name: aliases
x: &c { field: { path: payload.x, op: eq, value: 1 } }
rules:
  - capability: a
    action: deny
    condition: *c
  - capability: b
    action: deny
    condition: { not: *c }
---
`, Options{})
	in := &Intent{Payload: map[string]any{"x": 1.0}}
	if !p.Rules[0].Condition.Eval(in) || p.Rules[1].Condition.Eval(in) {
		t.Error("aliased conditions evaluate wrongly")
	}
}

// TestLimits: deep nesting and alias bombs are problems, not hangs.
func TestLimits(t *testing.T) {
	deep := "---\nname: deep\nrules:\n  - capability: a\n    action: deny\n    condition: " +
		strings.Repeat("{not: ", 100) + "{field: {path: payload.x, op: exists}}" + strings.Repeat("}", 100) + "\n---\n"
	ps := Validate("f", []byte(deep), Options{})
	if len(ps) != 1 || ps[0].Code != CodeTooLarge {
		t.Errorf("deep: %v", ps)
	}
	var b strings.Builder
	b.WriteString("---\nname: bomb\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("rules:\n  - capability: a\n    action: deny\n    condition:\n      field: {path: payload.x, op: in, values: *a9}\n---\n")
	ps = Validate("f", []byte(b.String()), Options{})
	if len(ps) != 1 || ps[0].Code != CodeTooLarge {
		t.Errorf("alias bomb: %v", ps)
	}
}
