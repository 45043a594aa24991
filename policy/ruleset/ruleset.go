// Package ruleset loads temporal rules from the files users have: gallery
// policy JSON, the canonical policy object, the policies embedded in a
// reference trace, and ponens's own YAML rules file. JSON is read through the YAML parser (JSON is YAML), so
// every problem is reported with the file, line and column of the value.
package ruleset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ponens/ponens/internal/readlimit"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/policy/stdcheck"
	"github.com/ponens/ponens/schema"
)

// Mode is what the engine does when a rule is violated (seed 001).
type Mode string

// Modes.
const (
	Observe Mode = "observe" // record only
	Deny    Mode = "deny"    // block the violating step
	Suspend Mode = "suspend" // pause the run for approval
	Abort   Mode = "abort"   // end the run
)

func validMode(m string) bool {
	switch Mode(m) {
	case Observe, Deny, Suspend, Abort:
		return true
	}
	return false
}

// Rule is one temporal rule, parsed and checked.
type Rule struct {
	ID          string
	Name        string
	Description string
	Severity    string
	Mode        Mode // as declared; see Set.Enforced for the mode in force
	Formula     ltl.Formula
	Source      string // the formula as written
	// Check names the standard check (policy/stdcheck) the formula is,
	// when it is exactly one's name: Formula and Text are its definition.
	Check       string
	Text        string // the canonical printed form
	Level       ltl.Level
	Declared    *ltl.Level // the declared language_level, if any
	Reasoner    string
	AppliesWhen *eval.Selector
	File        string
	Line, Col   int // of the rule in File

	// Capability is set for a POLICY.md rule, which has no Formula: it is
	// judged by the authorization engine on every tool call (Set.Policies).
	Capability *policymd.Rule
	Policy     *policymd.Policy

	// Enforce is set when the rules file that declares the rule asks for
	// enforcement (enforce: true): its modes are in force whatever the set's
	// Enforce says. It reaches no rule of another file.
	Enforce bool
	// Metadata holds the members of the rule's object that loading does not
	// read (a gallery policy's domain, author, tags, …), as they were.
	Metadata map[string]any

	formulaNode *yaml.Node // the formula's value in File, for positions
	embedded    bool       // loaded from a reference trace's policies
}

// Set is the rules loaded from one or more files, with the settings that go
// with them.
type Set struct {
	Rules []*Rule
	// Enforce puts every rule's mode in force (the --enforce flag or
	// rules.enforce); when false, only the rules of files declaring
	// enforce: true have their mode in force and every other rule observes.
	Enforce bool
	Opts    eval.Options
	// Policies are the POLICY.md files loaded; their rules are in Rules too.
	Policies []*policymd.Policy
	// Notes are the members of rule objects that are kept as metadata but
	// are neither read by ponens nor known catalogue metadata: usually
	// harmless, sometimes a field a newer ponens would read. A strict check
	// reports them.
	Notes Problems
	// Skipped are the policies a file names but does not define (a
	// reference trace's policies list may name a policy by id only): they
	// cannot be evaluated, and commands say so.
	Skipped Problems

	declared map[string]*Problem // where each rule id was first declared
	maxBytes int64               // the file limit of the Load that made it
}

// Enforced returns the mode the engine actually enforces for r.
func (s *Set) Enforced(r *Rule) Mode {
	if !(s.Enforce || r.Enforce) || r.Mode == "" {
		return Observe
	}
	return r.Mode
}

// Options returns the evaluation options for r: the set's, with r's reasoner
// and applies_when.
func (s *Set) Options(r *Rule) *eval.Options {
	o := s.Opts
	o.Reasoner = r.Reasoner
	o.AppliesWhen = r.AppliesWhen
	return &o
}

// Problem is one thing wrong with a policy file, at a place in it.
type Problem struct {
	File      string
	Line, Col int
	RuleID    string
	Code      string
	Msg       string
	// Excerpt is the formula's line with a caret under the column, for a
	// formula error; empty otherwise.
	Excerpt string
}

func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.RuleID != "" {
		fmt.Fprintf(&b, "rule %s: ", p.RuleID)
	}
	fmt.Fprintf(&b, "%s: %s", p.Code, p.Msg)
	return b.String()
}

// Problems is every problem found while loading, sorted by file and place.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// unreadable is the problem of a file that could not be read: code
// too-large for one over its limit, unreadable otherwise.
func unreadable(file string, err error) *Problem {
	if errors.Is(err, schema.ErrTooLarge) {
		return &Problem{File: file, Code: "too-large", Msg: err.Error()}
	}
	return &Problem{File: file, Code: "unreadable", Msg: err.Error()}
}

// PolicyExtensions are the file extensions a directory load picks up, besides
// files named POLICY.md.
var PolicyExtensions = map[string]bool{".json": true, ".yaml": true, ".yml": true}

// Load reads every path (files, or directories whose policy files are read in
// lexical order, recursively) into one Set. Rules with problems are left out
// and every problem is returned; a nil Problems means everything loaded.
func Load(paths ...string) (*Set, Problems) {
	return LoadLimited(0, paths...)
}

// DefaultMaxFileBytes is the largest rules file or POLICY.md Load reads.
const DefaultMaxFileBytes = 4 << 20

// LoadLimited is Load refusing any file over maxBytes (rules.max_file_bytes;
// DefaultMaxFileBytes when <= 0) before reading past it, as a problem with
// code too-large.
func LoadLimited(maxBytes int64, paths ...string) (*Set, Problems) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	set := &Set{maxBytes: maxBytes}
	var probs Problems
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			probs = append(probs, &Problem{File: p, Code: "unreadable", Msg: err.Error()})
			continue
		}
		for _, f := range files {
			if strings.EqualFold(filepath.Ext(f), ".md") {
				probs = append(probs, set.addPolicyMD(f)...)
				continue
			}
			data, err := readlimit.ReadFile(f, maxBytes, "rules.max_file_bytes")
			if err != nil {
				probs = append(probs, unreadable(f, err))
				continue
			}
			probs = append(probs, set.add(f, data)...)
		}
	}
	sort.SliceStable(probs, func(i, j int) bool {
		a, b := probs[i], probs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return set, probs
}

func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	root := p
	if real, err := filepath.EvalSymlinks(p); err == nil && real != filepath.Clean(p) {
		root = real // WalkDir does not follow a symbolic link it starts at
	}
	var files []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (PolicyExtensions[strings.ToLower(filepath.Ext(path))] || d.Name() == policymd.FileName) {
			if rel, err := filepath.Rel(root, path); err == nil {
				path = filepath.Join(p, rel) // named as the user named it
			}
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// FromFormula builds a one-rule Set from formula text, as `--formula` gives.
func FromFormula(id, text string) (*Rule, Problems) {
	r := &Rule{ID: id, Source: text, File: "--formula", Line: 1, Col: 1, Mode: Observe}
	if p := r.compile(nil, nil); p != nil {
		return nil, Problems{p}
	}
	return r, nil
}

// Add appends a rule that was built in code (FromFormula), refusing a
// duplicate id.
func (s *Set) Add(r *Rule) Problems {
	for _, q := range s.Rules {
		if q.ID == r.ID {
			return Problems{{File: r.File, Line: r.Line, Col: r.Col, RuleID: r.ID, Code: "duplicate-id",
				Msg: fmt.Sprintf("rule id already defined at %s:%d", q.File, q.Line)}}
		}
	}
	s.Rules = append(s.Rules, r)
	return nil
}

// compile parses, checks and classifies the rule's formula. node is the YAML
// node of the formula value, for positions.
func (r *Rule) compile(node *yaml.Node, predicates map[string]ltl.Formula) *Problem {
	src := r.Source
	if c, ok := stdcheck.Get(strings.TrimSpace(src)); ok && predicates[c.Name] == nil {
		r.Check, src, node = c.Name, c.Formula, nil
	}
	f, err := ltl.Parse(src)
	if err == nil {
		if errs := ltl.Check(src, f); len(errs) > 0 {
			err = errs[0]
		}
	}
	if err != nil {
		p := &Problem{File: r.File, Line: r.Line, Col: r.Col, RuleID: r.ID, Code: "formula", Msg: err.Error()}
		if pe, ok := err.(*ltl.Error); ok {
			p.Code = pe.Code
			p.Msg = pe.Msg
			if _, excerpt, found := strings.Cut(pe.Detail(), "\n"); found {
				p.Excerpt = excerpt
			}
			if node != nil {
				p.Line, p.Col = formulaPlace(node, pe)
			} else {
				p.Line, p.Col = pe.Line, pe.Col
			}
		}
		return p
	}
	r.Formula = f
	r.Text = ltl.Print(f)
	r.Level = levelWith(f, predicates, map[string]bool{})
	if r.Declared != nil && *r.Declared < r.Level {
		return &Problem{File: r.File, Line: r.Line, Col: r.Col, RuleID: r.ID, Code: "level",
			Msg: fmt.Sprintf("declared language_level %s, but the formula needs %s", r.Declared, r.Level)}
	}
	return nil
}

// levelWith is the language level of f with the user predicates it uses
// counted in: a rule is as structural as its predicates.
func levelWith(f ltl.Formula, predicates map[string]ltl.Formula, seen map[string]bool) ltl.Level {
	level := ltl.Classify(f)
	ltl.Walk(f, func(n ltl.Node) bool {
		if a, ok := n.(*ltl.Atom); ok && !seen[a.Name] {
			if pred, ok := predicates[a.Name]; ok {
				seen[a.Name] = true
				level = max(level, levelWith(pred, predicates, seen))
			}
		}
		return true
	})
	return level
}

// formulaPlace maps a position in a formula to the file: exact for a plain or
// quoted scalar on one line, the value's line for block scalars.
func formulaPlace(n *yaml.Node, pe *ltl.Error) (line, col int) {
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		return n.Line + pe.Line, pe.Col
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if pe.Line == 1 {
			return n.Line, n.Column + pe.Col
		}
	default:
		if pe.Line == 1 {
			return n.Line, n.Column + pe.Col - 1
		}
	}
	return n.Line, n.Column
}

// addPolicyMD loads a POLICY.md file: its rules join the set as capability
// rules, with the mode their action implies (deny → deny, require_approval →
// suspend, allow → observe).
func (s *Set) addPolicyMD(file string) Problems {
	pol, err := policymd.ParseFile(file, policymd.Options{MaxFileBytes: s.maxBytes})
	if err != nil {
		var vp policymd.Problems
		if errors.As(err, &vp) {
			var probs Problems
			for _, p := range vp {
				probs = append(probs, &Problem{File: p.File, Line: p.Line, Col: p.Col, Code: string(p.Code), Msg: p.Message})
			}
			return probs
		}
		return Problems{unreadable(file, err)}
	}
	for _, q := range s.Policies {
		if q.Name == pol.Name {
			return Problems{{File: file, Line: 1, Col: 1, Code: string(policymd.CodeShadowed),
				Msg: fmt.Sprintf("policy %q is also loaded from %s: two POLICY.md files with one name would both be in force under it; refused, %s stays; rename one of them", pol.Name, q.File, q.File)}}
		}
	}
	var probs Problems
	for i := range pol.Rules {
		cr := &pol.Rules[i]
		r := &Rule{ID: cr.ID, Description: cr.Reason, Severity: string(pol.Severity), Text: "POLICY.md " + pol.Name + ": " + cr.Label(),
			File: file, Line: cr.Pos.Line, Col: cr.Pos.Col, Capability: cr, Policy: pol, Mode: Observe}
		if r.Description == "" {
			r.Description = cr.Description
		}
		switch cr.Action {
		case policymd.Deny:
			r.Mode = Deny
		case policymd.RequireApproval:
			r.Mode = Suspend
		}
		if first, dup := s.declared[r.ID]; dup {
			probs = append(probs, &Problem{File: file, Line: r.Line, Col: r.Col, RuleID: r.ID, Code: "duplicate-id",
				Msg: fmt.Sprintf("rule id already defined at %s:%d", first.File, first.Line)})
			continue
		}
		if s.declared == nil {
			s.declared = map[string]*Problem{}
		}
		s.declared[r.ID] = &Problem{File: file, Line: r.Line}
		s.Rules = append(s.Rules, r)
	}
	s.Policies = append(s.Policies, pol)
	return probs
}
