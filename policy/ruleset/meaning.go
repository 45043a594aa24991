package ruleset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/policymd"
)

// Meaning returns a digest of what r judges: two rules with the same digest
// give the same statuses on every run. It covers, for a temporal rule, the
// canonical printed formula, the user predicates it uses (transitively,
// printed), its reasoner and applies_when, and the set's high-stakes paths
// when it reads high_stakes_path;
// for a POLICY.md rule, the rules of its whole policy, the policy's
// severity and appliesTo, since precedence between the rules of a policy
// decides which one a tool call breaks (precedence across policies is not
// covered). It leaves out what only names or explains a rule (id,
// name, description, reason, the file and place it came from) and its mode:
// a mode change changes what the engine does, not the statuses.
func (s *Set) Meaning(r *Rule) string {
	type temporal struct {
		Text            string            `json:"text"`
		Predicates      map[string]string `json:"predicates,omitempty"`
		Reasoner        string            `json:"reasoner,omitempty"`
		AppliesWhen     *eval.Selector    `json:"appliesWhen,omitempty"`
		HighStakesPaths []string          `json:"highStakesPaths,omitempty"`
	}
	type capability struct {
		Rule      string          `json:"rule"`
		Severity  string          `json:"severity"`
		AppliesTo []string        `json:"appliesTo,omitempty"`
		Rules     []policymd.Rule `json:"rules"`
	}
	var v any
	if r.Capability != nil {
		c := capability{Rule: r.Capability.ID}
		if r.Policy != nil {
			c.Severity, c.AppliesTo = string(r.Policy.Severity), r.Policy.AppliesTo
			for _, pr := range r.Policy.Rules {
				pr.Reason, pr.Description = "", ""
				c.Rules = append(c.Rules, pr)
			}
		}
		v = c
	} else {
		t := temporal{Text: r.Text, Reasoner: r.Reasoner, AppliesWhen: r.AppliesWhen}
		used := map[string]bool{}
		if r.Formula != nil {
			predicatesUsed(r.Formula, s.Opts.Predicates, used)
		}
		if len(s.Opts.HighStakesPaths) > 0 && usesAtom(r.Formula, "high_stakes_path", s.Opts.Predicates, used) {
			t.HighStakesPaths = slices.Sorted(slices.Values(s.Opts.HighStakesPaths))
		}
		for _, name := range slices.Sorted(maps.Keys(used)) {
			if t.Predicates == nil {
				t.Predicates = map[string]string{}
			}
			t.Predicates[name] = ltl.Print(s.Opts.Predicates[name])
		}
		v = t
	}
	data, err := json.Marshal(v)
	if err != nil { // only plain data above: cannot happen
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// usesAtom reports whether f, or one of the predicates in used, has the
// atom name.
func usesAtom(f ltl.Formula, name string, preds map[string]ltl.Formula, used map[string]bool) bool {
	has := func(g ltl.Formula) bool {
		found := false
		ltl.Walk(g, func(n ltl.Node) bool {
			if a, ok := n.(*ltl.Atom); ok && a.Name == name {
				found = true
			}
			return !found
		})
		return found
	}
	if f != nil && has(f) {
		return true
	}
	for p := range used {
		if has(preds[p]) {
			return true
		}
	}
	return false
}

// predicatesUsed adds to used the user predicates f refers to, and theirs.
func predicatesUsed(f ltl.Formula, preds map[string]ltl.Formula, used map[string]bool) {
	ltl.Walk(f, func(n ltl.Node) bool {
		if a, ok := n.(*ltl.Atom); ok && !used[a.Name] {
			if p, ok := preds[a.Name]; ok {
				used[a.Name] = true
				predicatesUsed(p, preds, used)
			}
		}
		return true
	})
}

// Renamed returns a copy of s in which each rule whose id is a key of ids
// carries the id it maps to; s is not changed. The fleet service uses it to
// give a rule whose meaning changed a new, versioned id.
func (s *Set) Renamed(ids map[string]string) *Set {
	out := *s
	out.Rules = make([]*Rule, len(s.Rules))
	for i, r := range s.Rules {
		if id, ok := ids[r.ID]; ok {
			c := *r
			c.ID = id
			r = &c
		}
		out.Rules[i] = r
	}
	return &out
}
