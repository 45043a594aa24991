package monitor

import (
	"fmt"
	"maps"

	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/schema"
)

// Decision is the answer to "may this step run now?".
type Decision struct {
	Decision policymd.Action `json:"decision"` // allow, deny or require_approval
	Rule     *string         `json:"rule"`     // the deciding rule; null for the default allow
	Reason   string          `json:"reason"`
	Source   *string         `json:"source"` // "policy.md", "temporal", or null
}

// Sources of a decision.
const (
	SourcePolicyMD = "policy.md"
	SourceTemporal = "temporal"
)

func rank(a policymd.Action) int {
	switch a {
	case policymd.Deny:
		return 2
	case policymd.RequireApproval:
		return 1
	}
	return 0
}

// Decide judges the proposed step a as the run's next action, without
// changing the run: the POLICY.md authorization engine, and every temporal
// rule whose enforced mode is deny, suspend or abort that the step would
// violate (deny and abort deny; suspend asks for approval). The most severe
// answer wins; among equals, POLICY.md first, then rules in order. The step
// stands as the run's latest position while it is judged (counts and the
// run's actions include it), after the positions sealed so far: a position
// still waiting for its outputs is not yet part of the history.
func (r *Run) Decide(a *schema.Action) Decision {
	best := Decision{Decision: policymd.Allow, Reason: policymd.DefaultReason}
	if r.e.capEngine != nil && a.Capability != "" {
		in := policymd.IntentFromAction(r.b.T.RunID, a)
		if d := r.e.capEngine.Decide(&in); d.Action != policymd.Allow {
			id, src := d.RuleID, SourcePolicyMD
			if own, ok := r.e.capIDs[id]; ok { // the id the rule goes by here (a versioned one in the fleet)
				id = own
			}
			best = Decision{Decision: d.Action, Rule: &id, Reason: d.Reason, Source: &src}
		}
	}
	ev := &schema.Event{V: schema.EnvelopeVersion, RunID: r.b.T.RunID, Seq: r.b.T.LastSeq + 1, Type: schema.TypeAction, Action: a}
	p, undo := r.b.Proposed(ev)
	memo := maps.Clone(r.b.T.Memo) // running counts must not keep the step
	r.e.serial++                   // a position of its own for the leaf cache
	defer func() {
		undo()
		r.b.T.Memo = memo
		r.e.serial++
	}()
	for i, prog := range r.e.progs {
		rs := &r.rules[i]
		if prog.capability {
			continue
		}
		var answer policymd.Action
		switch prog.mode {
		case schema.ModeDeny, schema.ModeAbort:
			answer = policymd.Deny
		case schema.ModeSuspend:
			answer = policymd.RequireApproval
		default:
			continue
		}
		if rank(answer) <= rank(best.Decision) {
			continue
		}
		vals := r.e.vals[i]
		r.computeProps(i, rs, p, r.positions == 0, vals)
		if r.e.transition(prog, rs.res, vals) != r.e.in.false {
			continue
		}
		id, src := prog.rule.ID, SourceTemporal
		reason := prog.rule.Description
		if reason == "" {
			reason = prog.rule.ID
		}
		reason = fmt.Sprintf("%s (the step would violate %s)", reason, prog.subformula(r.e.in.blame(rs.res, vals)))
		best = Decision{Decision: answer, Rule: &id, Reason: reason, Source: &src}
	}
	return best
}
