package policymd

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// BuildPoliciesContext renders every policy, in order, as Markdown for an
// agent's system prompt (seed 004 §6): for each policy a "# Policy: <name>"
// heading, its description, its scope, applies-to, severity and version, its
// rules as a readable list, then its Markdown body as written, except that
// a body with a level-1 heading has its headings moved one level down to
// nest under the policy's. It returns "" for no policies.
func BuildPoliciesContext(policies []*Policy) string {
	var b strings.Builder
	for i, p := range policies {
		if i > 0 {
			b.WriteString("\n")
		}
		writePolicyContext(&b, p)
	}
	return b.String()
}

// BuildAgentPoliciesContext is BuildPoliciesContext over the policies that
// apply to agentID: those whose appliesTo contains "all" or agentID.
func BuildAgentPoliciesContext(policies []*Policy, agentID string) string {
	var keep []*Policy
	for _, p := range policies {
		if p.AppliesToAgent(agentID) {
			keep = append(keep, p)
		}
	}
	return BuildPoliciesContext(keep)
}

func writePolicyContext(b *strings.Builder, p *Policy) {
	fmt.Fprintf(b, "# Policy: %s\n\n", p.Name)
	if p.Description != "" {
		fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(p.Description))
	}
	fmt.Fprintf(b, "- Scope: %s\n", p.Scope)
	fmt.Fprintf(b, "- Applies to: %s\n", describeAppliesTo(p.AppliesTo))
	fmt.Fprintf(b, "- Severity: %s (%s)\n", p.Severity, describeSeverity(p.Severity))
	if p.Version != "" {
		fmt.Fprintf(b, "- Version: %s\n", p.Version)
	}
	if len(p.Rules) > 0 {
		b.WriteString("\n## Enforced rules\n\n")
		for i := range p.Rules {
			fmt.Fprintf(b, "- %s\n", describeRule(&p.Rules[i]))
		}
	}
	if body := strings.Trim(p.Body, "\r\n"); strings.TrimSpace(body) != "" {
		fmt.Fprintf(b, "\n%s\n", nestHeadings(body, 2))
	}
}

// actionLabel names an action as the conventional body sections do
// (seed 004 §3).
func actionLabel(a Action) string {
	switch a {
	case Deny:
		return "Forbidden"
	case RequireApproval:
		return "Ask first"
	case Allow:
		return "Allowed"
	}
	return string(a)
}

// describeRule renders a rule as one readable line:
// **Forbidden**: file.write when payload.path includes ".env". Reason. (rule id)
func describeRule(r *Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: %s", actionLabel(r.Action), describeTarget(r))
	if why := ruleWhy(r); why != "" {
		fmt.Fprintf(&b, ". %s", strings.TrimSuffix(why, "."))
	}
	fmt.Fprintf(&b, ". (rule `%s`", r.ID)
	if r.Priority != 0 {
		fmt.Fprintf(&b, ", priority %s", formatNumber(r.Priority))
	}
	b.WriteString(")")
	return b.String()
}

// describeTarget renders what a rule covers: its capability and condition.
func describeTarget(r *Rule) string {
	s := "any capability"
	if r.Capability != "*" {
		s = "`" + r.Capability + "`"
	}
	if r.Condition != nil {
		s += " when " + describeCondition(r.Condition)
	}
	return s
}

// ruleWhy is a rule's reason, else its description (single line).
func ruleWhy(r *Rule) string {
	why := r.Reason
	if why == "" {
		why = r.Description
	}
	return strings.Join(strings.Fields(why), " ")
}

func describeAppliesTo(list []string) string {
	for _, a := range list {
		if a == "all" {
			return "all agents"
		}
	}
	return strings.Join(list, ", ")
}

func describeSeverity(s Severity) string {
	switch s {
	case SeverityBlock:
		return "breaking this policy is blocked"
	case SeverityWarn:
		return "breaking this policy is reported as a warning"
	case SeverityRequireApproval:
		return "breaking this policy needs human approval"
	}
	return "unknown severity"
}

// describeCondition renders a condition in plain words, e.g.
// payload.amount > 1000 and constraints.environment is "production".
func describeCondition(c *Condition) string {
	switch {
	case c == nil:
		return "always"
	case c.Field != nil:
		return describeField(c.Field)
	case c.And != nil:
		return joinConditions(c.And, " and ", func(s *Condition) bool { return s.Or != nil })
	case c.Or != nil:
		return joinConditions(c.Or, " or ", func(s *Condition) bool { return s.And != nil })
	case c.Not != nil:
		return "not (" + describeCondition(c.Not) + ")"
	}
	return "always"
}

func joinConditions(list []*Condition, sep string, paren func(*Condition) bool) string {
	if len(list) == 0 {
		if sep == " and " {
			return "always"
		}
		return "never"
	}
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = describeCondition(s)
		if s != nil && paren(s) {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, sep)
}

func describeField(f *FieldCondition) string {
	switch f.Op {
	case OpEq:
		return fmt.Sprintf("%s is %s", f.Path, formatValue(f.Value))
	case OpNeq:
		return fmt.Sprintf("%s is not %s", f.Path, formatValue(f.Value))
	case OpGt:
		return fmt.Sprintf("%s > %s", f.Path, formatValue(f.Value))
	case OpGte:
		return fmt.Sprintf("%s >= %s", f.Path, formatValue(f.Value))
	case OpLt:
		return fmt.Sprintf("%s < %s", f.Path, formatValue(f.Value))
	case OpLte:
		return fmt.Sprintf("%s <= %s", f.Path, formatValue(f.Value))
	case OpIncludes:
		return fmt.Sprintf("%s includes %s", f.Path, formatValue(f.Value))
	case OpIn:
		return fmt.Sprintf("%s is one of %s", f.Path, formatValue(f.Values))
	case OpNotIn:
		return fmt.Sprintf("%s is not one of %s", f.Path, formatValue(f.Values))
	case OpExists:
		return fmt.Sprintf("%s is set", f.Path)
	case OpNotExists:
		return fmt.Sprintf("%s is not set", f.Path)
	case OpWildcard:
		return "always"
	}
	return fmt.Sprintf("%s %s %s", f.Path, f.Op, formatValue(f.Value))
}

// formatValue renders a condition value as JSON, lists with ", " between
// elements.
func formatValue(v any) string {
	switch x := normalizeShallow(v).(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case float64:
		return formatNumber(x)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// formatNumber renders a number the way it is usually written: 1000, 1.5
// (very large or small ones in exponent form).
func formatNumber(f float64) string {
	if a := math.Abs(f); a != 0 && (a >= 1e21 || a < 1e-6) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// nestHeadings moves the ATX headings of a Markdown text (outside fenced
// code blocks) down so that the highest one is at level top, keeping their
// relative levels (capped at 6); a text whose headings are all at level top
// or lower is returned unchanged.
func nestHeadings(text string, top int) string {
	lines := strings.Split(text, "\n")
	levels := make([]int, len(lines))
	fence := ""
	minLevel := 7
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if len(l)-len(t) > 3 {
			continue
		}
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		level := len(t) - len(strings.TrimLeft(t, "#"))
		if level >= 1 && level <= 6 && (len(t) == level || t[level] == ' ' || t[level] == '\t') {
			levels[i] = level
			minLevel = min(minLevel, level)
		}
	}
	shift := top - minLevel
	if shift <= 0 {
		return text
	}
	for i, level := range levels {
		if level > 0 {
			t := strings.TrimLeft(lines[i], " ")
			lines[i] = strings.Repeat("#", min(level+shift, 6)) + t[level:]
		}
	}
	return strings.Join(lines, "\n")
}

// Label renders a rule as one plain line, the text a rule manifest shows for
// it: "deny file.write when payload.path includes \".env\"".
func (r *Rule) Label() string {
	target := describeTarget(r)
	return string(r.Action) + " " + strings.ReplaceAll(target, "`", "")
}
