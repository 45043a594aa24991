package mapping

import (
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the shipped mapping table, as YAML.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// Lineage is what a mapped action does to the artifact graph.
type Lineage string

// The lineage kinds of a rule.
const (
	// LineageNone leaves the graph alone.
	LineageNone Lineage = ""
	// LineageEdit produces a new SourceCode version of its target file.
	LineageEdit Lineage = "edit"
	// LineageTest consumes the files edited since the last commit and
	// produces a TestResult.
	LineageTest Lineage = "test"
	// LineageCommit consumes the files edited since the last commit.
	LineageCommit Lineage = "commit"
)

// Rule is one row of the mapping table: which calls it matches and what
// action they become.
type Rule struct {
	// Tools are tool names, exact or path.Match globs ("mcp__*", "*").
	Tools []string `yaml:"tools"`
	// Command, when set, is a regular expression the call's shell command
	// must match (searched, not anchored). A group named target gives the
	// call's target (`cat (?P<target>\S+)`).
	Command string `yaml:"command,omitempty"`
	// Type is the action type (EditFile, RunTests, …).
	Type string `yaml:"type"`
	// TypeIfNew is the type instead when the call's file has not been read
	// or edited before in the run (Write of a new file is a CreateFile).
	TypeIfNew string `yaml:"type_if_new,omitempty"`
	// Category is activity (the default), gateway, reasoning or governance.
	Category string `yaml:"category,omitempty"`
	// Capability is the POLICY.md capability the call needs.
	Capability string `yaml:"capability,omitempty"`
	// Target lists the input fields that may hold the call's file or URL,
	// in order of preference; the first present becomes a FileRef.
	Target []string `yaml:"target,omitempty"`
	// Lineage is edit, test, commit or empty.
	Lineage Lineage `yaml:"lineage,omitempty"`

	// Line and Column locate the rule in its file.
	Line, Column int `yaml:"-"`
	// File is where the rule was read from ("default" for the shipped table).
	File string `yaml:"-"`

	command *regexp.Regexp
	exact   map[string]bool // the tool names without glob characters
	globs   []string        // the others
}

// Table is the ordered mapping table. The zero value matches nothing.
type Table struct {
	Rules []*Rule
}

// tableFile is the YAML form of a mapping file.
type tableFile struct {
	Replace bool        `yaml:"replace"`
	Rules   []yaml.Node `yaml:"rules"`
}

// Error is a problem of a mapping file, with its place.
type Error struct {
	File         string
	Line, Column int
	Field        string
	Msg          string
}

func (e *Error) Error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", where, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", where, e.Msg)
}

// inFile names the file in err, an *Error of decodeStrict.
func inFile(err error, file string) error {
	var e *Error
	if errors.As(err, &e) {
		e.File = file
	}
	return err
}

var validLineage = map[Lineage]bool{LineageNone: true, LineageEdit: true, LineageTest: true, LineageCommit: true}
var validCategory = map[string]bool{"": true, "activity": true, "gateway": true, "reasoning": true, "governance": true}

// Default returns the shipped table. It is parsed once and shared: do
// not modify it.
func Default() *Table { return defaultTable() }

var defaultTable = sync.OnceValue(func() *Table {
	t, err := parse(defaultYAML, "default")
	if err != nil {
		panic("mapping: the shipped table does not parse: " + err.Error())
	}
	return t.table
})

// Load returns the table a mapping file asks for: its rules before the
// shipped ones, or alone when it says replace: true. An empty name is the
// shipped table.
func Load(data []byte, name string) (*Table, error) {
	if name == "" && data == nil {
		return Default(), nil
	}
	p, err := parse(data, name)
	if err != nil {
		return nil, err
	}
	if p.replace {
		return p.table, nil
	}
	return &Table{Rules: slices.Concat(p.table.Rules, Default().Rules)}, nil
}

type parsed struct {
	table   *Table
	replace bool
}

// Parse reads a mapping file's rules alone, without the shipped ones.
// Every problem names the file, line and column.
func Parse(data []byte, name string) (*Table, error) {
	p, err := parse(data, name)
	if err != nil {
		return nil, err
	}
	return p.table, nil
}

func parse(data []byte, name string) (*parsed, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: name, Msg: "expected YAML: " + err.Error()}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: name, Msg: "expected a mapping with rules, got an empty file"}
	}
	root := doc.Content[0]
	var f tableFile
	if err := decodeStrict(root, &f); err != nil {
		return nil, inFile(err, name)
	}
	if len(f.Rules) == 0 {
		return nil, &Error{File: name, Line: root.Line, Column: root.Column, Field: "rules", Msg: "expected at least one rule"}
	}
	t := &Table{}
	var errs []error
	for i := range f.Rules {
		r, err := parseRule(&f.Rules[i], name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.Rules = append(t.Rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &parsed{table: t, replace: f.Replace}, nil
}

func parseRule(n *yaml.Node, file string) (*Rule, error) {
	r := &Rule{Line: n.Line, Column: n.Column, File: file}
	fail := func(field, format string, args ...any) error {
		return &Error{File: file, Line: n.Line, Column: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if err := decodeStrict(n, r); err != nil {
		return nil, inFile(err, file)
	}
	if len(r.Tools) == 0 {
		return nil, fail("tools", "expected at least one tool name or glob")
	}
	for _, t := range r.Tools {
		if _, err := path.Match(t, ""); err != nil || t == "" {
			return nil, fail("tools", "expected a tool name or glob, got %q", t)
		}
	}
	if !isTypeName(r.Type) {
		return nil, fail("type", "expected a CamelCase action type, got %q", r.Type)
	}
	if r.TypeIfNew != "" && !isTypeName(r.TypeIfNew) {
		return nil, fail("type_if_new", "expected a CamelCase action type, got %q", r.TypeIfNew)
	}
	if !validCategory[r.Category] {
		return nil, fail("category", "expected activity, gateway, reasoning or governance, got %q", r.Category)
	}
	if !validLineage[r.Lineage] {
		return nil, fail("lineage", "expected edit, test or commit, got %q", r.Lineage)
	}
	if r.Command != "" {
		re, err := regexp.Compile(r.Command)
		if err != nil {
			return nil, fail("command", "expected a regular expression: %v", err)
		}
		r.command = re
	}
	if r.Category == "" {
		r.Category = "activity"
	}
	r.exact = map[string]bool{}
	for _, t := range r.Tools {
		if strings.ContainsAny(t, `*?[\`) {
			r.globs = append(r.globs, t)
		} else {
			r.exact[t] = true
		}
	}
	return r, nil
}

// decodeStrict decodes the mapping node n into v, refusing keys that v's
// yaml tags do not name; an error names the key's line and column.
func decodeStrict(n *yaml.Node, v any) error {
	if n.Kind != yaml.MappingNode {
		return &Error{Line: n.Line, Column: n.Column, Msg: "expected a mapping"}
	}
	known := yamlKeys(reflect.TypeOf(v).Elem())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !known[k.Value] {
			return &Error{Line: k.Line, Column: k.Column, Field: k.Value, Msg: "unknown key (expected one of " + strings.Join(slices.Sorted(maps.Keys(known)), ", ") + ")"}
		}
	}
	if err := n.Decode(v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			// "line 2: cannot unmarshal …": the first problem, its line ours.
			msg := te.Errors[0]
			if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
				msg = rest
			}
			return &Error{Line: n.Line, Column: n.Column, Msg: msg}
		}
		return &Error{Line: n.Line, Column: n.Column, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return nil
}

func yamlKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

func isTypeName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Match returns the first rule that matches the tool name and shell command
// (empty when the call runs none), or nil.
func (t *Table) Match(tool, command string) *Rule {
	for _, r := range t.Rules {
		if r.matches(tool, command) {
			return r
		}
	}
	return nil
}

// commandTarget is the index of the command pattern's "target" group,
// or -1.
func (r *Rule) commandTarget() int {
	if r.command == nil {
		return -1
	}
	return r.command.SubexpIndex("target")
}

func (r *Rule) matches(tool, command string) bool {
	if !r.exact[tool] && !slices.ContainsFunc(r.globs, func(g string) bool { ok, _ := path.Match(g, tool); return ok }) {
		return false
	}
	return r.command == nil || r.command.MatchString(command)
}
