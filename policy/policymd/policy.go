package policymd

import "encoding/json"

// Scope says what kind of subject a policy governs (seed 004 §2).
type Scope string

// The scopes of seed 004 §2.
const (
	ScopeProject    Scope = "project"
	ScopeSkill      Scope = "skill"
	ScopeAgent      Scope = "agent"
	ScopeDepartment Scope = "department"
)

// Severity is a policy's default consequence of breaking it: block, warn or
// require_approval (seed 004 §2). See the package documentation for what this
// package does with it.
type Severity string

// The severities of seed 004 §2.
const (
	SeverityBlock           Severity = "block"
	SeverityWarn            Severity = "warn"
	SeverityRequireApproval Severity = "require_approval"
)

// Action is what a rule decides: allow, deny or require_approval.
type Action string

// The actions of seed 004 §2, also the actions of a Decision.
const (
	Allow           Action = "allow"
	Deny            Action = "deny"
	RequireApproval Action = "require_approval"
)

// Op is a field condition operator (seed 004 §2).
type Op string

// The operators of seed 004 §2.
const (
	OpEq        Op = "eq"
	OpNeq       Op = "neq"
	OpGt        Op = "gt"
	OpGte       Op = "gte"
	OpLt        Op = "lt"
	OpLte       Op = "lte"
	OpIncludes  Op = "includes"
	OpIn        Op = "in"
	OpNotIn     Op = "notIn"
	OpExists    Op = "exists"
	OpNotExists Op = "notExists"
	OpWildcard  Op = "wildcard"
)

// Pos is a position in a POLICY.md file: 1-based line and column of the file
// (not of the frontmatter alone). The zero Pos means "unknown".
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Policy is one parsed POLICY.md file: its frontmatter with defaults applied,
// and its Markdown body.
type Policy struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Version     string   `json:"version,omitempty"`
	Scope       Scope    `json:"scope"`
	AppliesTo   []string `json:"appliesTo"`
	Severity    Severity `json:"severity"`
	// Strict is the frontmatter's strict key: when true the file was
	// validated as with Options.Strict.
	Strict bool   `json:"strict,omitempty"`
	Rules  []Rule `json:"rules"`
	// Body is the Markdown after the closing --- line, unchanged.
	Body string `json:"body,omitempty"`
	// BodyLine is the file line the body starts on.
	BodyLine int `json:"-"`

	// File is the path the policy was read from, as given to Parse.
	File string `json:"file,omitempty"`
	// Origin and Skill say where discovery found the file (zero when the
	// policy was parsed directly).
	Origin Origin `json:"origin,omitempty"`
	Skill  string `json:"skill,omitempty"`
	// Replaces lists the files of earlier-loaded policies with the same name
	// that this one replaced (seed 004 §10: the latest loaded copy wins).
	Replaces []string `json:"replaces,omitempty"`
}

// Rule is one machine-enforceable rule of a policy (seed 004 §2).
type Rule struct {
	// ID is the rule's id; when the file gives none it is
	// "<policy-name>#<index>" with a 1-based index in the file, and
	// GeneratedID is true.
	ID          string     `json:"id"`
	GeneratedID bool       `json:"generatedId,omitempty"`
	Capability  string     `json:"capability"`
	Action      Action     `json:"action"`
	Condition   *Condition `json:"condition,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	Priority    float64    `json:"priority"`
	Description string     `json:"description,omitempty"`
	// Pos is the position of the rule's mapping in the file.
	Pos Pos `json:"-"`
}

// Condition is a rule condition: exactly one of Field, And, Or and Not is
// set. A nil *Condition matches every intent.
type Condition struct {
	Field *FieldCondition `json:"field,omitempty"`
	And   []*Condition    `json:"and,omitempty"`
	Or    []*Condition    `json:"or,omitempty"`
	Not   *Condition      `json:"not,omitempty"`
	Pos   Pos             `json:"-"`
}

// FieldCondition compares the value at Path in an intent with Value or
// Values using Op. Values hold JSON-like data: nil, bool, float64 (every
// number), string, []any and map[string]any.
type FieldCondition struct {
	Path string
	Op   Op
	// Value is the right-hand value; HasValue tells an explicit null from an
	// absent value.
	Value    any
	HasValue bool
	// Values is the right-hand list of in and notIn.
	Values    []any
	HasValues bool
	Pos       Pos
}

// MarshalJSON writes the field condition as in the frontmatter: path, op and
// value or values when present.
func (f *FieldCondition) MarshalJSON() ([]byte, error) {
	m := map[string]any{"path": f.Path, "op": f.Op}
	if f.HasValue {
		m["value"] = f.Value
	}
	if f.HasValues {
		m["values"] = f.Values
	}
	return json.Marshal(m)
}

// Origin says which discovery location (seed 004 §4) a policy came from.
type Origin string

// The discovery locations of seed 004 §4, in search order.
const (
	OriginRoot      Origin = "root"       // <wd>/POLICY.md
	OriginPolicyDir Origin = "policy-dir" // <wd>/<policyDir>/POLICY.md
	OriginPolicySub Origin = "policy-sub" // <wd>/<policyDir>/<name>/POLICY.md
	OriginSkill     Origin = "skill"      // <wd>/<skillDir>/<name>/POLICY.md
)

// AppliesToAgent reports whether the policy applies to the agent or skill id
// agentID: its AppliesTo contains "all" or agentID.
func (p *Policy) AppliesToAgent(agentID string) bool {
	for _, a := range p.AppliesTo {
		if a == "all" || (agentID != "" && a == agentID) {
			return true
		}
	}
	return false
}

// AppliesToIntent reports whether the policy applies to in: its AppliesTo
// contains "all", in's WorkerID or in's Specialist.
func (p *Policy) AppliesToIntent(in *Intent) bool {
	for _, a := range p.AppliesTo {
		if a == "all" || (in.WorkerID != "" && a == in.WorkerID) || (in.Specialist != "" && a == in.Specialist) {
			return true
		}
	}
	return false
}
