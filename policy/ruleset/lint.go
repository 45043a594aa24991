package ruleset

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/schema"
)

// knownTypes are the action and artifact types of the trace format, with
// their synonyms: a CamelCase atom naming none of them, and no type of the
// traces a check is given, is probably a typo.
var knownTypes = []string{
	// actions
	"ReadFile", "EditFile", "CreateFile", "DeleteFile", "GitCommit", "GitPush", "RunTests", "RunCommand",
	"SearchCode", "AnalyzeCode", "ReadDocumentation", "Verify", "Formalize", "DefineVerificationGoal",
	"DefineVG", "StateSpaceAnalysis", "Decompose", "GenerateTests", "ToolCall", "Deploy", "UserApproval",
	"RequestApproval", "Plan", "Reason", "Conformance", "CoSimulate", "Observe",
	// artifacts
	"SourceCode", "VerificationGoal", "VerificationResult", "IMLModel", "FormalModel",
	"StateSpaceAnalysisResult", "Decomposition", "ConformanceResult", "CoSimulationResult",
	"GeneratedTests", "TestResult", "CommandResult", "Observation", "Residual", "ResidualResolution",
}

// Vocabulary is what the traces a policy is checked against use: their
// action and artifact types, and the flags and labels of their actions
// (which the reference reading of an unknown lowercase atom matches).
type Vocabulary struct {
	Types map[string]bool
	Flags map[string]bool
}

// Learn adds the types, flags and labels of events to v.
func (v *Vocabulary) Learn(events []schema.Event) {
	if v.Types == nil {
		v.Types, v.Flags = map[string]bool{}, map[string]bool{}
	}
	addArtifacts := func(arts ...schema.Artifact) {
		for _, a := range arts {
			v.Types[a.Type] = true
		}
	}
	for _, e := range events {
		switch {
		case e.Action != nil:
			v.Types[e.Action.Type] = true
			addArtifacts(e.Action.Artifacts...)
			for _, key := range []string{"flags", "labels"} {
				var words []string
				if json.Unmarshal(e.Action.Extra[key], &words) == nil {
					for _, w := range words {
						v.Flags[w] = true
					}
				}
			}
		case e.Artifact != nil:
			addArtifacts(*e.Artifact)
		}
	}
}

// Lint returns warnings about names in the set's formulas that are
// probably typos, since they would silently change what a rule means: a
// CamelCase atom (or the T of T(φ)) that is neither a known type nor a type
// in vocab, and a lowercase atom that is neither built in, nor a predicate
// of the set, nor a name in extra (such as the standard named checks),
// nor a flag or label in vocab. Such an atom still evaluates (a type
// nothing has never holds; a lowercase name falls back to a text match),
// so these are warnings, each at the name's place with the closest known
// name when there is one.
func (s *Set) Lint(vocab Vocabulary, extra ...string) Problems {
	types := slices.Concat(knownTypes, slices.Sorted(maps.Keys(vocab.Types)))
	atoms := slices.Concat(builtinAtoms(), slices.Sorted(maps.Keys(s.Opts.Predicates)), extra, slices.Sorted(maps.Keys(vocab.Flags)))
	var warns Problems
	for _, r := range s.Rules {
		if r.Formula == nil {
			continue
		}
		seen := map[string]bool{}
		ltl.Walk(r.Formula, func(n ltl.Node) bool {
			var name string
			switch n := n.(type) {
			case *ltl.Atom:
				name = n.Name
			case *ltl.TypeCall:
				name = n.Type
			default:
				return true
			}
			if seen[name] {
				return true
			}
			seen[name] = true
			kind, known := "atom", atoms
			if unicode.IsUpper([]rune(name)[0]) {
				kind, known = "type", types
			}
			if slices.Contains(known, name) || kind == "atom" && eval.IsBuiltinAtom(name) {
				return true
			}
			msg := fmt.Sprintf("%s %s is not known", kind, name)
			if kind == "type" {
				msg += " (not a type of the trace format or of the traces given)"
			} else {
				msg += " (not built in, a predicate, or a flag of the traces given): it is read as a text match"
			}
			if near := Closest(name, known); near != "" {
				msg += fmt.Sprintf("; did you mean %s?", near)
			}
			line, col := r.place(n.Pos().Start, name)
			warns = append(warns, &Problem{File: r.File, Line: line, Col: col, RuleID: r.ID, Code: "unknown-name", Msg: msg})
			return true
		})
	}
	return warns
}

// place is the file position of name at the byte offset off in r's
// formula; the rule's own place when the formula evaluated is not the text
// written (a name standing for a definition).
func (r *Rule) place(off int, name string) (line, col int) {
	if off < 0 || off > len(r.Source) || !strings.HasPrefix(r.Source[off:], name) {
		return r.Line, r.Col
	}
	l, c := ltl.LineCol(r.Source, off)
	if r.formulaNode == nil {
		if l == 1 && r.File == "--formula" {
			return 1, c
		}
		return r.Line, r.Col
	}
	return formulaPlace(r.formulaNode, &ltl.Error{Line: l, Col: c})
}

// builtinAtoms are the lowercase atoms the language defines, for
// suggestions (eval.IsBuiltinAtom decides).
func builtinAtoms() []string {
	return []string{"action", "high_stakes_path", "start_event", "end_event", "error",
		"activity", "gateway", "reasoning", "governance", "completed", "failed",
		"proved", "refuted", "sat", "unknown", "bounded", "passed", "partial", "matched", "mismatched"}
}
