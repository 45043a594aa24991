package policymd

// Decision is the outcome of authorizing one intent (seed 004 §5).
type Decision struct {
	// Action is allow, deny or require_approval: the action of the deciding
	// rule, or allow when no rule matched.
	Action Action `json:"action"`
	// RuleID, Policy and File name the deciding rule, its policy and the
	// policy's file; they are empty for the default allow.
	RuleID string `json:"ruleId,omitempty"`
	Reason string `json:"reason,omitempty"`
	Policy string `json:"policy,omitempty"`
	File   string `json:"file,omitempty"`
	// Severity is the deciding policy's severity, reported for the runtime
	// to act on; the engine never changes Action because of it.
	Severity Severity `json:"severity,omitempty"`
	// Rule is the matched rule itself (nil for the default allow).
	Rule *Rule `json:"-"`
}

// DefaultReason is the Reason of the decision when no rule matches.
const DefaultReason = "no rule matched; allowed by default"

// Decider authorizes intents. Engine and Composite implement it.
type Decider interface {
	Decide(in *Intent) Decision
}

// Engine is the AuthorizationEngine of seed 004 §5 over a list of policies in
// load order. It is immutable and safe for concurrent use.
type Engine struct {
	policies []*Policy
}

// NewEngine returns an engine over policies, in the given (load) order.
func NewEngine(policies []*Policy) *Engine {
	return &Engine{policies: append([]*Policy(nil), policies...)}
}

// Policies returns the engine's policies in load order.
func (e *Engine) Policies() []*Policy { return append([]*Policy(nil), e.policies...) }

// Match is a rule that matches an intent, with its policy.
type Match struct {
	Policy *Policy
	Rule   *Rule
}

// Matches returns every rule that matches in, in load order: the rule's
// policy applies to the intent (Policy.AppliesToIntent), the rule's
// capability pattern matches the intent's capability, and the rule's
// condition holds.
func (e *Engine) Matches(in *Intent) []Match {
	var out []Match
	for _, p := range e.policies {
		if !p.AppliesToIntent(in) {
			continue
		}
		for i := range p.Rules {
			r := &p.Rules[i]
			if MatchCapability(r.Capability, in.Capability) && r.Condition.Eval(in) {
				out = append(out, Match{Policy: p, Rule: r})
			}
		}
	}
	return out
}

// Decide authorizes in: among the matching rules the one with the highest
// priority decides, the first in load order on a tie; when none matches the
// intent is allowed. The reason is the rule's reason, else its description.
func (e *Engine) Decide(in *Intent) Decision {
	var best *Match
	matches := e.Matches(in)
	for i := range matches {
		if best == nil || matches[i].Rule.Priority > best.Rule.Priority {
			best = &matches[i]
		}
	}
	if best == nil {
		return Decision{Action: Allow, Reason: DefaultReason}
	}
	reason := best.Rule.Reason
	if reason == "" {
		reason = best.Rule.Description
	}
	return Decision{
		Action:   best.Rule.Action,
		RuleID:   best.Rule.ID,
		Reason:   reason,
		Policy:   best.Policy.Name,
		File:     best.Policy.File,
		Severity: best.Policy.Severity,
		Rule:     best.Rule,
	}
}

// Composite composes deciders (seed 004 §5 "Composite engines"): the most
// severe decision wins, deny over require_approval over allow; among equally
// severe decisions the first decider's wins. An empty Composite allows.
type Composite []Decider

// Decide asks every decider and returns the most severe decision.
func (c Composite) Decide(in *Intent) Decision {
	best := Decision{Action: Allow, Reason: DefaultReason}
	bestRank := -1
	for _, d := range c {
		dec := d.Decide(in)
		if r := severityRank(dec.Action); r > bestRank {
			best, bestRank = dec, r
		}
	}
	return best
}

// severityRank orders actions by severity: allow < require_approval < deny.
// An unknown action ranks below allow.
func severityRank(a Action) int {
	switch a {
	case Allow:
		return 1
	case RequireApproval:
		return 2
	case Deny:
		return 3
	}
	return 0
}
