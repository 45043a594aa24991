package ruleset

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
)

// The file shapes, told apart by their keys:
//
//   - rules file (ours): an object with "rules" (and optional "enforce",
//     "predicates", "high_stakes_paths");
//   - reference trace: an object with "actions", whose "policies" are the
//     policy objects it was written against;
//   - policy object: an object with "policy_id";
//   - gallery policy: an object with "id" and "formula"; a list of them is
//     accepted too.
type (
	rulesFile struct {
		Version         int               `yaml:"version"`
		Enforce         *bool             `yaml:"enforce"`
		HighStakesPaths []string          `yaml:"high_stakes_paths"`
		Predicates      map[string]string `yaml:"predicates"`
		Rules           []yaml.Node       `yaml:"rules"`
	}
	ruleEntry struct {
		ID            string         `yaml:"id"`
		PolicyID      string         `yaml:"policy_id"`
		Name          string         `yaml:"name"`
		Description   string         `yaml:"description"`
		Formula       string         `yaml:"formula"`
		Severity      string         `yaml:"severity"`
		Mode          string         `yaml:"mode"`
		OnViolation   string         `yaml:"onViolation"`
		LanguageLevel string         `yaml:"language_level"`
		Level         string         `yaml:"level"`
		Reasoner      string         `yaml:"reasoner"`
		AppliesWhen   *eval.Selector `yaml:"applies_when"`
	}
)

var predicateName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// add decodes one file into s and returns its problems.
func (s *Set) add(file string, data []byte) Problems {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Problems{yamlProblem(file, err)}
	}
	if len(doc.Content) == 0 {
		return Problems{{File: file, Line: 1, Col: 1, Code: "empty", Msg: "no policies in file"}}
	}
	root := doc.Content[0]
	switch {
	case root.Kind == yaml.SequenceNode:
		var probs Problems
		for _, n := range root.Content {
			probs = append(probs, s.addRule(file, n)...)
		}
		return probs
	case root.Kind == yaml.MappingNode && hasKey(root, "rules"):
		return s.addRulesFile(file, root)
	case root.Kind == yaml.MappingNode && hasKey(root, "actions"):
		return s.addTracePolicies(file, root)
	case root.Kind == yaml.MappingNode:
		return s.addRule(file, root)
	}
	return Problems{{File: file, Line: root.Line, Col: root.Column, Code: "bad-type",
		Msg: "expected a policy object, a list of policies, or a rules file with a rules list"}}
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func valueNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func yamlProblem(file string, err error) *Problem {
	msg := err.Error()
	line := 0
	if m := regexp.MustCompile(`line (\d+)`).FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return &Problem{File: file, Line: line, Col: 1, Code: "syntax", Msg: msg}
}

// ruleKeys are the keys of a rule that loading reads: ruleEntry's fields.
var ruleKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeOf(ruleEntry{})
	for i := range t.NumField() {
		keys[t.Field(i).Tag.Get("yaml")] = true
	}
	return keys
}()

// catalogueKeys are the metadata keys of gallery policies and policy objects
// that evaluation does not read. They are kept in Rule.Metadata like any
// other unread key, and are never worth a note.
var catalogueKeys = map[string]bool{
	"category": true, "rationale": true, "tags": true, "examples": true, "pack": true,
	"scope": true, "kind": true, "reference_artifact_id": true,
	"domain": true, "author": true, "date_added": true, "downloads": true, "source": true,
	"group": true, "tier": true, "fix_domain": true, "governance_state": true, "reference_model": true,
}

// unknownKeys reports every key of the mapping n that is not in known,
// with the known key it probably misspells.
func unknownKeys(file string, n *yaml.Node, known map[string]bool) Problems {
	var probs Problems
	names := slices.Sorted(maps.Keys(known))
	for _, k := range keys(n) {
		if !known[k.Value] {
			msg := fmt.Sprintf("unknown field %q", k.Value)
			if near := Closest(k.Value, names); near != "" {
				msg += fmt.Sprintf(": did you mean %q?", near)
			}
			probs = append(probs, &Problem{File: file, Line: k.Line, Col: k.Column, Code: "unknown-field", Msg: msg})
		}
	}
	return probs
}

// metadata sorts the keys of the rule mapping n that loading does not read.
// One that is a near miss of a key loading reads ("fromula",
// "language_levle") is a problem naming the key it was probably meant to
// be: keeping it as metadata would silently lose the formula or the level.
// Every other one is kept in meta; those no policy catalogue is known to
// use are also returned as notes, which a strict check reports.
func metadata(file string, n *yaml.Node) (meta map[string]any, notes, probs Problems) {
	read := slices.Sorted(maps.Keys(ruleKeys))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if ruleKeys[k.Value] {
			continue
		}
		if near := Closest(k.Value, read); near != "" && !catalogueKeys[k.Value] {
			probs = append(probs, &Problem{File: file, Line: k.Line, Col: k.Column, Code: "unknown-field",
				Msg: fmt.Sprintf("unknown field %q: did you mean %q?", k.Value, near)})
			continue
		}
		var val any
		if err := v.Decode(&val); err != nil {
			val = v.Value
		}
		if meta == nil {
			meta = map[string]any{}
		}
		meta[k.Value] = jsonable(val)
		if !catalogueKeys[k.Value] {
			notes = append(notes, &Problem{File: file, Line: k.Line, Col: k.Column, Code: "metadata",
				Msg: fmt.Sprintf("field %q is not read by ponens: kept as metadata", k.Value)})
		}
	}
	return meta, notes, probs
}

// jsonable turns what YAML decodes into values encoding/json can write:
// maps with keys that are not strings get string keys.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = jsonable(x)
		}
		return out
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
	}
	return v
}

func (s *Set) addRulesFile(file string, root *yaml.Node) Problems {
	var rf rulesFile
	if err := root.Decode(&rf); err != nil {
		return Problems{yamlProblem(file, err)}
	}
	probs := unknownKeys(file, root, map[string]bool{"version": true, "enforce": true, "high_stakes_paths": true, "predicates": true, "rules": true})
	if rf.Version > 1 {
		probs = append(probs, &Problem{File: file, Line: root.Line, Col: root.Column, Code: "version",
			Msg: fmt.Sprintf("rules file version %d is not supported by this build (supports 1)", rf.Version)})
		return probs
	}
	s.Opts.HighStakesPaths = append(s.Opts.HighStakesPaths, rf.HighStakesPaths...)
	if pn := valueNode(root, "predicates"); pn != nil {
		probs = append(probs, s.addPredicates(file, pn)...)
	}
	enforce := rf.Enforce != nil && *rf.Enforce
	for i := range rf.Rules {
		n := len(s.Rules)
		probs = append(probs, s.addRule(file, &rf.Rules[i])...)
		if enforce && len(s.Rules) > n {
			s.Rules[n].Enforce = true // this file's rules only
		}
	}
	return probs
}

func keys(m *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		out = append(out, m.Content[i])
	}
	return out
}

func (s *Set) addPredicates(file string, m *yaml.Node) Problems {
	var probs Problems
	if s.Opts.Predicates == nil {
		s.Opts.Predicates = map[string]ltl.Formula{}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		bad := func(code, format string, args ...any) {
			probs = append(probs, &Problem{File: file, Line: k.Line, Col: k.Column, Code: code, Msg: fmt.Sprintf(format, args...)})
		}
		if !predicateName.MatchString(k.Value) || eval.IsBuiltinAtom(k.Value) {
			bad("bad-predicate", "predicate name %q must be lowercase_with_underscores and not a built-in atom", k.Value)
			continue
		}
		f, err := ltl.Parse(v.Value)
		if err == nil {
			if errs := ltl.Check(v.Value, f); len(errs) > 0 {
				err = errs[0]
			}
		}
		if err == nil && ltl.HasTemporal(f) {
			err = fmt.Errorf("a predicate is a condition at one position and cannot use temporal operators")
		}
		if err != nil {
			p := &Problem{File: file, Line: v.Line, Col: v.Column, Code: "bad-predicate", Msg: fmt.Sprintf("predicate %s: %v", k.Value, err)}
			if pe, ok := err.(*ltl.Error); ok {
				p.Line, p.Col = formulaPlace(v, pe)
				p.Msg = fmt.Sprintf("predicate %s: %s: %s", k.Value, pe.Code, pe.Msg)
			}
			probs = append(probs, p)
			continue
		}
		s.Opts.Predicates[k.Value] = f
	}
	// A predicate may use another, but not itself through any chain.
	for name := range s.Opts.Predicates {
		if cyclic(name, s.Opts.Predicates, map[string]bool{}) {
			probs = append(probs, &Problem{File: file, Line: m.Line, Col: m.Column, Code: "bad-predicate",
				Msg: fmt.Sprintf("predicate %s is defined in terms of itself", name)})
			delete(s.Opts.Predicates, name)
		}
	}
	return probs
}

func cyclic(name string, preds map[string]ltl.Formula, onPath map[string]bool) bool {
	if onPath[name] {
		return true
	}
	f, ok := preds[name]
	if !ok {
		return false
	}
	onPath[name] = true
	defer delete(onPath, name)
	found := false
	ltl.Walk(f, func(n ltl.Node) bool {
		if a, ok := n.(*ltl.Atom); ok && !found {
			found = cyclic(a.Name, preds, onPath)
		}
		return !found
	})
	return found
}

func (s *Set) addRule(file string, n *yaml.Node) Problems {
	if n.Kind != yaml.MappingNode {
		return Problems{{File: file, Line: n.Line, Col: n.Column, Code: "bad-type", Msg: "a rule is an object"}}
	}
	var e ruleEntry
	if err := n.Decode(&e); err != nil {
		return Problems{yamlProblem(file, err)}
	}
	id := e.ID
	if id == "" {
		id = e.PolicyID
	}
	meta, notes, probs := metadata(file, n)
	for _, p := range append(notes, probs...) {
		p.RuleID = id
	}
	if probs != nil {
		return probs
	}
	s.Notes = append(s.Notes, notes...)
	if first, dup := s.declared[id]; dup && id != "" {
		return Problems{{File: file, Line: n.Line, Col: n.Column, RuleID: id, Code: "duplicate-id",
			Msg: fmt.Sprintf("rule id already defined at %s:%d", first.File, first.Line)}}
	}
	if s.declared == nil {
		s.declared = map[string]*Problem{}
	}
	s.declared[id] = &Problem{File: file, Line: n.Line}
	r := &Rule{ID: id, Name: e.Name, Description: e.Description, Severity: e.Severity, Source: e.Formula,
		Reasoner: e.Reasoner, AppliesWhen: e.AppliesWhen, File: file, Line: n.Line, Col: n.Column, Mode: Observe, Metadata: meta}
	if r.Description == "" {
		r.Description = e.Name
	}
	bad := func(field, code, format string, args ...any) Problems {
		line, col := n.Line, n.Column
		if v := valueNode(n, field); v != nil {
			line, col = v.Line, v.Column
		}
		return Problems{{File: file, Line: line, Col: col, RuleID: id, Code: code, Msg: fmt.Sprintf(format, args...)}}
	}
	if id == "" {
		return bad("id", "missing-field", "a rule needs an id (or policy_id)")
	}
	if e.Formula == "" {
		return bad("formula", "missing-field", "a rule needs a formula")
	}
	mode := e.Mode
	if mode == "" {
		mode = e.OnViolation
	}
	if mode != "" {
		if !validMode(mode) {
			field := "mode"
			if e.Mode == "" {
				field = "onViolation"
			}
			return bad(field, "bad-value", "mode %q is not one of observe, deny, suspend, abort", mode)
		}
		r.Mode = Mode(mode)
	}
	lvl := e.LanguageLevel
	if lvl == "" {
		lvl = e.Level
	}
	if lvl != "" {
		l, err := ltl.ParseLevel(lvl)
		if err != nil {
			field := "language_level"
			if e.LanguageLevel == "" {
				field = "level"
			}
			return bad(field, "bad-value", "%v", err)
		}
		r.Declared = &l
	}
	r.formulaNode = valueNode(n, "formula")
	if p := r.compile(r.formulaNode, s.Opts.Predicates); p != nil {
		return Problems{p}
	}
	s.Rules = append(s.Rules, r)
	return nil
}

// addTracePolicies loads the policies a reference trace embeds: each policy
// object of its "policies" list is a rule. An entry that only names a
// policy (a string) has no formula to evaluate: it is skipped, with the
// reason in s.Skipped. A trace without any policy object is a problem, as
// a policy file without policies is.
func (s *Set) addTracePolicies(file string, root *yaml.Node) Problems {
	list := valueNode(root, "policies")
	if list == nil || list.Kind != yaml.SequenceNode {
		line, col := root.Line, root.Column
		if list != nil {
			line, col = list.Line, list.Column
		}
		return Problems{{File: file, Line: line, Col: col, Code: "no-policies",
			Msg: "a trace file given as rules needs a policies list of policy objects"}}
	}
	var probs Problems
	added := 0
	for i, n := range list.Content {
		if n.Kind == yaml.ScalarNode {
			s.Skipped = append(s.Skipped, &Problem{File: file, Line: n.Line, Col: n.Column, RuleID: n.Value, Code: "name-only",
				Msg: fmt.Sprintf("policies[%d] names a policy without its formula: not checked (give its policy file with --rules)", i)})
			continue
		}
		if s.sameEmbedded(n) {
			added++ // another trace embeds this very policy: one rule serves both
			continue
		}
		before := len(s.Rules)
		probs = append(probs, s.addRule(file, n)...)
		added += len(s.Rules) - before
		if len(s.Rules) > before {
			s.Rules[before].embedded = true
		}
	}
	if added == 0 && len(probs) == 0 {
		probs = append(probs, &Problem{File: file, Line: list.Line, Col: list.Column, Code: "no-policies",
			Msg: "the trace embeds no policy object with a formula"})
	}
	return probs
}

// sameEmbedded reports whether the policy object n is already in the set,
// loaded from another trace with the same formula, name, description,
// severity and mode: traces written against one policy all embed it.
func (s *Set) sameEmbedded(n *yaml.Node) bool {
	var e ruleEntry
	if n.Kind != yaml.MappingNode || n.Decode(&e) != nil {
		return false
	}
	id := cmp.Or(e.ID, e.PolicyID)
	for _, r := range s.Rules {
		if r.ID == id && r.embedded {
			return r.Source == e.Formula && r.Name == e.Name && r.Severity == e.Severity &&
				r.Description == cmp.Or(e.Description, e.Name) && r.Mode == Mode(cmp.Or(e.Mode, e.OnViolation, string(Observe)))
		}
	}
	return false
}
