package policymd

import (
	"fmt"
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// Top-level, rule, condition and field-condition keys.
var (
	topKeys       = []string{"name", "description", "version", "scope", "appliesTo", "severity", "rules", "strict"}
	ruleKeys      = []string{"id", "capability", "action", "condition", "reason", "priority", "description"}
	conditionKeys = []string{"field", "and", "or", "not"}
	fieldKeys     = []string{"path", "op", "value", "values"}
)

// document decodes the whole frontmatter.
func (d *decoder) document(fm *frontmatter) *Policy {
	p := &Policy{Scope: ScopeProject, AppliesTo: []string{"all"}, Severity: SeverityBlock}
	var doc yaml.Node
	if err := safeUnmarshal(fm.yaml, &doc); err != nil {
		d.syntaxError(fm.yaml, err)
		return p
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = d.deref(doc.Content[0])
	}
	if root == nil || (root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		d.errorf(Pos{Line: d.offset, Col: 1}, CodeMissingField, "the frontmatter has no name")
		return p
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(d.pos(root), CodeBadType, "the frontmatter must be a mapping of fields, got %s", kindName(root))
		return p
	}
	d.enter(root)
	defer d.leave(root)
	// strict: true in the frontmatter turns strict mode on before unknown
	// fields are looked at.
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "strict" {
			if v := d.deref(root.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!bool" {
				p.Strict = v.Value == "true"
				d.strict = d.strict || p.Strict
			}
		}
	}
	seen := d.mapping(root, "frontmatter", topKeys, func(key, val *yaml.Node) {
		switch key.Value {
		case "name":
			if s, ok := d.str(key, val, true); ok {
				p.Name = s
				if msg := checkName(s); msg != "" {
					d.errorf(d.pos(val), CodeBadValue, "%s", msg)
				}
			}
		case "description":
			p.Description, _ = d.str(key, val, false)
		case "version":
			p.Version = d.scalarText(key, val)
		case "scope":
			if s, ok := d.str(key, val, false); ok {
				if msg := checkEnum("scope", s, scopes); msg != "" {
					d.errorf(d.pos(val), CodeBadValue, "%s", msg)
				}
				p.Scope = Scope(s)
			}
		case "appliesTo":
			if list, ok := d.strList(key, val); ok {
				p.AppliesTo = list
			}
		case "severity":
			if s, ok := d.str(key, val, false); ok {
				if msg := checkEnum("severity", s, severities); msg != "" {
					d.errorf(d.pos(val), CodeBadValue, "%s", msg)
				}
				p.Severity = Severity(s)
			}
		case "strict":
			if v := d.deref(val); v != nil && !(v.Kind == yaml.ScalarNode && (v.Tag == "!!bool" || v.Tag == "!!null")) {
				d.errorf(d.pos(v), CodeBadType, "strict must be true or false, got %s", kindName(v))
			}
		case "rules":
			p.Rules = d.rules(val)
		}
	})
	if !seen["name"] {
		d.errorf(d.pos(root), CodeMissingField, "the frontmatter has no name")
	}
	ids := map[string]Pos{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.ID == "" {
			r.ID = fmt.Sprintf("%s#%d", p.Name, i+1)
			r.GeneratedID = true
			continue
		}
		if prev, dup := ids[r.ID]; dup {
			d.errorf(r.Pos, CodeDuplicateID, "rule id %q is already used by the rule at line %d", r.ID, prev.Line)
			continue
		}
		ids[r.ID] = r.Pos
	}
	return p
}

// mapping walks the mapping n, reporting duplicate keys, non-scalar and merge
// keys, and (when strict) keys not in known; it calls f for every known key
// in document order and returns the set of known keys seen.
func (d *decoder) mapping(n *yaml.Node, what string, known []string, f func(key, val *yaml.Node)) map[string]bool {
	seen := map[string]bool{}
	keyPos := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.visit(k) {
			return seen
		}
		k = d.deref(k)
		if k == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(d.pos(k), CodeBadType, "a key of the %s must be a string, got %s", what, kindName(k))
			continue
		}
		if k.Tag == "!!merge" {
			d.errorf(d.pos(k), CodeBadValue, "YAML merge keys (<<) are not supported; write the fields out")
			continue
		}
		if p, dup := keyPos[k.Value]; dup {
			d.errorf(d.pos(k), CodeDuplicateKey, "%s %q is already defined at line %d", what, k.Value, p.Line)
			continue
		}
		keyPos[k.Value] = d.pos(k)
		if !contains(known, k.Value) {
			if d.strict {
				msg := fmt.Sprintf("unknown field %q in the %s", k.Value, what)
				if s := suggest(k.Value, known); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				d.errorf(d.pos(k), CodeUnknownField, "%s", msg)
			}
			continue
		}
		seen[k.Value] = true
		f(k, v)
	}
	return seen
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// isNull reports whether n is a YAML null (including an empty value).
func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// str decodes a string field. A null value is absent (ok false); when the
// field is required a null is a bad-type problem.
func (d *decoder) str(key, val *yaml.Node, required bool) (string, bool) {
	v := d.deref(val)
	if v == nil {
		return "", false
	}
	if isNull(v) {
		if required {
			d.errorf(d.valPos(key, v), CodeBadType, "%s must be a string, got null", key.Value)
		}
		return "", false
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		msg := fmt.Sprintf("%s must be a string, got %s", key.Value, kindName(v))
		if v.Kind == yaml.ScalarNode {
			msg += fmt.Sprintf(" (quote it: \"%s\")", v.Value)
		}
		d.errorf(d.pos(v), CodeBadType, "%s", msg)
		return "", false
	}
	return v.Value, true
}

// scalarText decodes a field that may be written as any scalar (version:
// 1.0 is a YAML number, but means the text "1.0").
func (d *decoder) scalarText(key, val *yaml.Node) string {
	v := d.deref(val)
	if v == nil || isNull(v) {
		return ""
	}
	if v.Kind != yaml.ScalarNode {
		d.errorf(d.pos(v), CodeBadType, "%s must be a string, got %s", key.Value, kindName(v))
		return ""
	}
	return v.Value
}

// strList decodes a non-empty list of non-empty strings.
func (d *decoder) strList(key, val *yaml.Node) ([]string, bool) {
	v := d.deref(val)
	if v == nil || isNull(v) {
		return nil, false
	}
	if v.Kind != yaml.SequenceNode {
		msg := fmt.Sprintf("%s must be a list of strings, got %s", key.Value, kindName(v))
		if v.Kind == yaml.ScalarNode {
			msg += fmt.Sprintf(" (write [%s])", v.Value)
		}
		d.errorf(d.pos(v), CodeBadType, "%s", msg)
		return nil, false
	}
	if len(v.Content) == 0 {
		d.errorf(d.pos(v), CodeBadValue, "%s must not be empty (omit it to apply to all)", key.Value)
		return nil, false
	}
	out := make([]string, 0, len(v.Content))
	ok := true
	for _, e := range v.Content {
		if !d.visit(e) {
			return nil, false
		}
		e = d.deref(e)
		if e == nil {
			ok = false
			continue
		}
		if e.Kind != yaml.ScalarNode || e.Tag != "!!str" {
			d.errorf(d.pos(e), CodeBadType, "every entry of %s must be a string, got %s", key.Value, kindName(e))
			ok = false
			continue
		}
		if e.Value == "" {
			d.errorf(d.pos(e), CodeBadValue, "an entry of %s is empty", key.Value)
			ok = false
			continue
		}
		out = append(out, e.Value)
	}
	return out, ok
}

// rules decodes the rules list.
func (d *decoder) rules(val *yaml.Node) []Rule {
	v := d.deref(val)
	if v == nil || isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		d.errorf(d.pos(v), CodeBadType, "rules must be a list of rules, got %s", kindName(v))
		return nil
	}
	out := make([]Rule, 0, len(v.Content))
	for _, item := range v.Content {
		if !d.visit(item) {
			break
		}
		out = append(out, d.rule(item))
	}
	return out
}

// rule decodes one rule.
func (d *decoder) rule(n *yaml.Node) Rule {
	r := Rule{Pos: d.pos(n)}
	n = d.deref(n)
	if n == nil {
		return r
	}
	r.Pos = d.pos(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(d.pos(n), CodeBadType, "a rule must be a mapping with capability and action, got %s", kindName(n))
		return r
	}
	d.enter(n)
	defer d.leave(n)
	seen := d.mapping(n, "rule", ruleKeys, func(key, val *yaml.Node) {
		switch key.Value {
		case "id":
			if s, ok := d.str(key, val, false); ok {
				if s == "" {
					d.errorf(d.pos(val), CodeBadValue, "id must not be empty (omit it to get a generated id)")
				}
				r.ID = s
			}
		case "capability":
			if s, ok := d.str(key, val, true); ok {
				if err := CheckCapabilityPattern(s); err != nil {
					d.errorf(d.pos(val), CodeBadValue, "%v", err)
				}
				r.Capability = s
			}
		case "action":
			if s, ok := d.str(key, val, true); ok {
				if msg := checkEnum("action", s, actions); msg != "" {
					d.errorf(d.pos(val), CodeBadValue, "%s", msg)
				}
				r.Action = Action(s)
			}
		case "condition":
			if v := d.deref(val); v != nil && !isNull(v) {
				r.Condition = d.condition(val, 1)
			}
		case "reason":
			r.Reason, _ = d.str(key, val, false)
		case "description":
			r.Description, _ = d.str(key, val, false)
		case "priority":
			v := d.deref(val)
			if v == nil || isNull(v) {
				return
			}
			f, ok := d.num(v)
			if !ok {
				d.errorf(d.pos(v), CodeBadType, "priority must be a number, got %s", kindName(v))
				return
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				d.errorf(d.pos(v), CodeBadValue, "priority must be a finite number")
				return
			}
			r.Priority = f
		}
	})
	for _, f := range []string{"capability", "action"} {
		if !seen[f] {
			d.errorf(r.Pos, CodeMissingField, "the rule has no %s", f)
		}
	}
	return r
}

// num decodes a YAML integer or float scalar.
func (d *decoder) num(v *yaml.Node) (float64, bool) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		return 0, false
	}
	var x any
	if err := v.Decode(&x); err != nil {
		return 0, false
	}
	f, ok := normalizeShallow(x).(float64)
	return f, ok
}

// condition decodes a condition at nesting depth depth.
func (d *decoder) condition(n *yaml.Node, depth int) *Condition {
	if !d.visit(n) {
		return nil
	}
	c := &Condition{Pos: d.pos(n)}
	n = d.deref(n)
	if n == nil {
		return c
	}
	c.Pos = d.pos(n)
	if depth > maxDepth {
		d.errorf(c.Pos, CodeTooLarge, "conditions are nested more than %d deep", maxDepth)
		return c
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(c.Pos, CodeBadType, "a condition must be a mapping with one of field, and, or, not; got %s", kindName(n))
		return c
	}
	d.enter(n)
	defer d.leave(n)
	var first *yaml.Node
	seen := d.mapping(n, "condition", conditionKeys, func(key, val *yaml.Node) {
		if first != nil {
			d.errorf(d.pos(key), CodeBadValue, "a condition has exactly one of field, and, or, not; this one has %s and %s", first.Value, key.Value)
			return
		}
		first = key
		switch key.Value {
		case "field":
			c.Field = d.field(val)
		case "and", "or":
			list := d.conditionList(key, val, depth)
			if key.Value == "and" {
				c.And = list
			} else {
				c.Or = list
			}
		case "not":
			v := d.deref(val)
			if v == nil {
				return
			}
			if isNull(v) {
				d.errorf(d.valPos(key, v), CodeMissingValue, "not needs a condition")
				return
			}
			c.Not = d.condition(val, depth+1)
		}
	})
	if len(seen) == 0 {
		d.errorf(c.Pos, CodeMissingField, "a condition needs one of field, and, or, not")
	}
	return c
}

// conditionList decodes the list of an and or an or.
func (d *decoder) conditionList(key, val *yaml.Node, depth int) []*Condition {
	v := d.deref(val)
	if v == nil {
		return []*Condition{}
	}
	if v.Kind != yaml.SequenceNode {
		d.errorf(d.pos(v), CodeBadType, "%s must be a list of conditions, got %s", key.Value, kindName(v))
		return []*Condition{}
	}
	if len(v.Content) == 0 {
		d.errorf(d.pos(v), CodeBadValue, "%s must list at least one condition", key.Value)
		return []*Condition{}
	}
	d.enter(v)
	defer d.leave(v)
	out := make([]*Condition, 0, len(v.Content))
	for _, item := range v.Content {
		sub := d.condition(item, depth+1)
		if sub == nil {
			break
		}
		out = append(out, sub)
	}
	return out
}

// field decodes a field condition and checks its operator's needs.
func (d *decoder) field(n *yaml.Node) *FieldCondition {
	f := &FieldCondition{Pos: d.pos(n)}
	n = d.deref(n)
	if n == nil {
		return f
	}
	f.Pos = d.pos(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(f.Pos, CodeBadType, "field must be a mapping with path and op, got %s", kindName(n))
		return f
	}
	d.enter(n)
	defer d.leave(n)
	var opNode, valueNode, valuesNode *yaml.Node
	opOK := false
	seen := d.mapping(n, "field condition", fieldKeys, func(key, val *yaml.Node) {
		switch key.Value {
		case "path":
			if s, ok := d.str(key, val, true); ok {
				if msg := checkPath(s); msg != "" {
					d.errorf(d.pos(val), CodeBadPath, "%s", msg)
				}
				f.Path = s
			}
		case "op":
			opNode = val
			if s, ok := d.str(key, val, true); ok {
				if msg := checkEnum("op", s, ops); msg != "" {
					d.errorf(d.pos(val), CodeBadValue, "%s", msg)
				} else {
					opOK = true
				}
				f.Op = Op(s)
			}
		case "value":
			valueNode = val
			f.HasValue = true
			f.Value = d.value(val, 1)
		case "values":
			valuesNode = val
			v := d.deref(val)
			if v == nil {
				return
			}
			if v.Kind != yaml.SequenceNode {
				d.errorf(d.pos(v), CodeBadType, "values must be a list, got %s", kindName(v))
				return
			}
			f.HasValues = true
			list, _ := d.value(val, 1).([]any)
			if list == nil {
				list = []any{}
			}
			f.Values = list
		}
	})
	for _, k := range []string{"path", "op"} {
		if !seen[k] {
			d.errorf(f.Pos, CodeMissingField, "the field condition has no %s", k)
		}
	}
	if !opOK {
		return f
	}
	needValue, needValues, needNumber := opNeeds(f.Op)
	switch {
	case needValue && valueNode == nil:
		msg := fmt.Sprintf("op %s needs a value", f.Op)
		if valuesNode != nil {
			msg += " (values is only for in and notIn)"
		}
		d.errorf(d.pos(opNode), CodeMissingValue, "%s", msg)
	case needNumber:
		if v := d.deref(valueNode); v != nil {
			if _, ok := d.num(v); !ok {
				d.errorf(d.pos(v), CodeBadType, "op %s needs a number value, got %s", f.Op, kindName(v))
			}
		}
	case needValues && valuesNode == nil:
		msg := fmt.Sprintf("op %s needs values (a list)", f.Op)
		if valueNode != nil {
			msg += "; found value, did you mean values?"
		}
		d.errorf(d.pos(opNode), CodeMissingValue, "%s", msg)
	}
	if d.strict {
		if valueNode != nil && !needValue {
			d.errorf(d.pos(valueNode), CodeUnexpectedValue, "op %s does not use value", f.Op)
		}
		if valuesNode != nil && !needValues {
			d.errorf(d.pos(valuesNode), CodeUnexpectedValue, "op %s does not use values", f.Op)
		}
	}
	return f
}

// value decodes any YAML value to the JSON-like Go values conditions compare:
// nil, bool, float64, string, []any and map[string]any.
func (d *decoder) value(n *yaml.Node, depth int) any {
	if !d.visit(n) {
		return nil
	}
	n = d.deref(n)
	if n == nil {
		return nil
	}
	if depth > maxDepth {
		d.errorf(d.pos(n), CodeTooLarge, "the value is nested more than %d deep", maxDepth)
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return n.Value
			}
			return b
		case "!!int", "!!float":
			if f, ok := d.num(n); ok {
				return f
			}
			d.errorf(d.pos(n), CodeBadValue, "cannot read the number %q", n.Value)
			return nil
		}
		return n.Value
	case yaml.SequenceNode:
		d.enter(n)
		defer d.leave(n)
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			out = append(out, d.value(e, depth+1))
			if d.over {
				break
			}
		}
		return out
	case yaml.MappingNode:
		d.enter(n)
		defer d.leave(n)
		out := map[string]any{}
		keyPos := map[string]Pos{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := d.deref(n.Content[i])
			if k == nil {
				continue
			}
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				d.errorf(d.pos(k), CodeBadType, "a key in a value must be a plain scalar, got %s", kindName(k))
				continue
			}
			if p, dup := keyPos[k.Value]; dup {
				d.errorf(d.pos(k), CodeDuplicateKey, "key %q is already defined at line %d", k.Value, p.Line)
				continue
			}
			keyPos[k.Value] = d.pos(k)
			out[k.Value] = d.value(n.Content[i+1], depth+1)
			if d.over {
				break
			}
		}
		return out
	}
	return nil
}

// kindName names the YAML type of n for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch n.Tag {
	case "!!str":
		return "a string"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!merge":
		return "a merge key"
	}
	return fmt.Sprintf("a %s value", strings.TrimLeft(n.Tag, "!"))
}
