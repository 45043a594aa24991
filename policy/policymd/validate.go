package policymd

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Code is the stable code of a validation problem; clients may switch on it.
type Code string

// The problem codes.
const (
	CodeYAMLSyntax         Code = "yaml-syntax"         // the frontmatter is not valid YAML
	CodeMissingFrontmatter Code = "missing-frontmatter" // the file does not start with a --- line
	CodeUnterminated       Code = "unterminated-frontmatter"
	CodeMissingField       Code = "missing-field"    // a required field is absent
	CodeBadType            Code = "bad-type"         // a field has the wrong YAML type
	CodeBadValue           Code = "bad-value"        // a field has a value outside its domain
	CodeBadPath            Code = "bad-path"         // a condition path is not resolvable
	CodeUnknownField       Code = "unknown-field"    // strict mode: a field the schema does not know
	CodeMissingValue       Code = "missing-value"    // an operator lacks its value or values
	CodeUnexpectedValue    Code = "unexpected-value" // strict mode: value/values the operator ignores
	CodeDuplicateKey       Code = "duplicate-key"    // a mapping key appears twice
	CodeDuplicateID        Code = "duplicate-id"     // two rules of one file share an id
	CodeTooLarge           Code = "too-large"        // nesting or alias expansion beyond the limits
	CodeInternal           Code = "internal-error"   // a bug: the parser panicked (fuzzing fails on it)
	CodeNotFound           Code = "not-found"        // a path given does not exist, or a directory holds no POLICY.md
	CodeUnreadable         Code = "unreadable"       // a path given cannot be read
	CodeShadowed           Code = "shadowed-policy"  // a skill's policy has the name of a project policy
)

// Problem is one thing wrong with a POLICY.md file, at a file position.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// String renders the problem as file:line:col: code: message.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", p.File, p.Line, p.Col, p.Code, p.Message)
}

// Problems is every problem found in one or more files, sorted by file and
// position. It is the error Parse returns for an invalid file; it matches
// ErrInvalid with errors.Is.
type Problems []Problem

// Error renders one problem per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(ps, ErrInvalid) true.
func (ps Problems) Is(target error) bool { return target == ErrInvalid }

// Sentinel errors of the package.
var (
	// ErrInvalid is matched by every Problems error: the file breaks the
	// POLICY.md format.
	ErrInvalid = errors.New("invalid POLICY.md")
	// ErrNoPolicy means an install source has no POLICY.md at its root.
	ErrNoPolicy = errors.New("no POLICY.md at the source root")
	// ErrInstalled means a policy of the same name, with other content, is
	// already installed, and Install was not asked to replace it.
	ErrInstalled = errors.New("a different policy of this name is already installed")
)

// sortProblems orders problems by file, line, column, code and message, and
// drops exact duplicates (an aliased YAML node is visited once per alias).
func sortProblems(ps Problems) Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Message < b.Message
	})
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Validate parses src as the POLICY.md file named file and returns every
// problem, sorted; nil means the file is valid.
func Validate(file string, src []byte, opts Options) Problems {
	_, err := Parse(file, src, opts)
	var ps Problems
	if errors.As(err, &ps) {
		return ps
	}
	return nil
}

// ValidateFile reads and validates the file at path. An unreadable file is an
// error, not a Problem.
func ValidateFile(path string, opts Options) (Problems, error) {
	src, err := opts.readFile(path)
	if err != nil {
		return nil, err
	}
	return Validate(path, src, opts), nil
}

var (
	kebabCase = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	snakeCase = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
)

// checkName returns why name is not a valid policy name, or "".
func checkName(name string) string {
	if kebabCase.MatchString(name) || snakeCase.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("name %q must be kebab-case or snake_case (lower-case letters and digits joined by - or _)", name)
}

var (
	scopes     = []string{string(ScopeProject), string(ScopeSkill), string(ScopeAgent), string(ScopeDepartment)}
	severities = []string{string(SeverityBlock), string(SeverityWarn), string(SeverityRequireApproval)}
	actions    = []string{string(Allow), string(Deny), string(RequireApproval)}
	ops        = []string{
		string(OpEq), string(OpNeq), string(OpGt), string(OpGte), string(OpLt), string(OpLte),
		string(OpIncludes), string(OpIn), string(OpNotIn), string(OpExists), string(OpNotExists), string(OpWildcard),
	}
)

// checkEnum returns why v is not one of allowed, or "".
func checkEnum(field, v string, allowed []string) string {
	for _, a := range allowed {
		if v == a {
			return ""
		}
	}
	msg := fmt.Sprintf("%s %q is not one of %s", field, v, strings.Join(allowed, ", "))
	if s := suggest(v, allowed); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// opNeeds says which right-hand side an operator needs.
func opNeeds(op Op) (value, values, number bool) {
	switch op {
	case OpEq, OpNeq, OpIncludes:
		return true, false, false
	case OpGt, OpGte, OpLt, OpLte:
		return true, false, true
	case OpIn, OpNotIn:
		return false, true, false
	}
	return false, false, false
}

// intentFields are the top-level fields a condition path may start with
// (seed 004 §2 "Resolvable paths", and the other ActionIntent fields of §5).
// The value says whether the field holds an object the path may go into.
var intentFields = map[string]bool{
	"payload": true, "constraints": true, "requester": true,
	"id": false, "workRunId": false, "taskId": false, "workerSessionId": false,
	"workerId": false, "specialist": false, "actionType": false, "capability": false,
	"toolName": false, "connectorId": false, "actionClass": false, "reversibility": false,
	"risk": false, "riskLevel": false, "createdAt": false,
}

// checkPath returns why path is not a resolvable ActionIntent path, or "".
func checkPath(path string) string {
	if path == "" {
		return "path must not be empty"
	}
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" {
			return fmt.Sprintf("path %q has an empty segment", path)
		}
	}
	object, ok := intentFields[segs[0]]
	if !ok {
		names := make([]string, 0, len(intentFields))
		for n := range intentFields {
			names = append(names, n)
		}
		sort.Strings(names)
		msg := fmt.Sprintf("path %q: %q is not an ActionIntent field (payload, constraints, requester, or a top-level field such as workerId or risk)", path, segs[0])
		if s := suggest(segs[0], names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return msg
	}
	if !object && len(segs) > 1 {
		return fmt.Sprintf("path %q goes into %s, which is not an object", path, segs[0])
	}
	return ""
}

// suggest returns the candidate closest to s when it is close enough to be a
// likely typo (case-insensitive match or edit distance at most 2), or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if strings.EqualFold(s, c) {
			return c
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(c), bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is at
// least max (long inputs stop early).
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= max {
			return max
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], max)
}
