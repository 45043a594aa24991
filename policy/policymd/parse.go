package policymd

import (
	"bytes"
	"fmt"
	"regexp"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ponens/ponens/internal/readlimit"
)

// Options tune parsing and validation.
type Options struct {
	// Strict rejects fields the schema does not know (unknown-field) and
	// value/values an operator does not use (unexpected-value). A file's
	// frontmatter can also ask for it with "strict: true"; either one is
	// enough.
	Strict bool
	// MaxFileBytes is the largest file ParseFile and ValidateFile read
	// (rules.max_file_bytes); larger ones are refused before they are read
	// past it. DefaultMaxFileBytes when <= 0.
	MaxFileBytes int64
}

// DefaultMaxFileBytes is the largest POLICY.md read when
// Options.MaxFileBytes is not set.
const DefaultMaxFileBytes = 4 << 20

// readFile reads path under opts' limit.
func (o Options) readFile(path string) ([]byte, error) {
	limit := o.MaxFileBytes
	if limit <= 0 {
		limit = DefaultMaxFileBytes
	}
	return readlimit.ReadFile(path, limit, "rules.max_file_bytes")
}

// Limits that keep hostile input cheap.
const (
	maxDepth = 64      // nesting of conditions and of values
	maxNodes = 100_000 // YAML nodes visited, aliases expanded
)

// Parse parses and validates the POLICY.md file named file (used in problem
// positions only) with contents src. It returns the policy with defaults
// applied, or a Problems error listing every problem of the file, sorted by
// position. It never panics.
func Parse(file string, src []byte, opts Options) (pol *Policy, err error) {
	defer func() {
		if r := recover(); r != nil {
			pol = nil
			err = Problems{{File: file, Line: 1, Col: 1, Code: CodeInternal, Message: fmt.Sprintf("internal error while parsing: %v", r)}}
		}
	}()
	fm, perr := splitFrontmatter(src)
	if perr != nil {
		perr.File = file
		return nil, Problems{*perr}
	}
	d := &decoder{file: file, offset: fm.openLine, lines: yamlLines(fm.yaml), strict: opts.Strict, budget: maxNodes}
	p := d.document(fm)
	if len(d.probs) > 0 {
		return nil, sortProblems(d.probs)
	}
	p.File = file
	p.Body = fm.body
	p.BodyLine = fm.bodyLine
	return p, nil
}

// ParseFile reads and parses the POLICY.md file at path.
func ParseFile(path string, opts Options) (*Policy, error) {
	src, err := opts.readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src, opts)
}

// frontmatter is a POLICY.md file split at its --- delimiters.
type frontmatter struct {
	yaml     []byte // the YAML between the delimiters
	openLine int    // file line of the opening ---
	body     string // everything after the closing --- line
	bodyLine int    // file line the body starts on
}

var delimiter = regexp.MustCompile(`^---[ \t]*\r?$`)

// splitFrontmatter splits src into frontmatter and body. The file must start
// (after an optional UTF-8 byte order mark) with a --- line and the
// frontmatter ends at the next --- line.
func splitFrontmatter(src []byte) (*frontmatter, *Problem) {
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	first, rest, _ := bytes.Cut(src, []byte("\n"))
	if !delimiter.Match(first) {
		return nil, &Problem{Line: 1, Col: 1, Code: CodeMissingFrontmatter,
			Message: "a POLICY.md file must start with a --- line opening its YAML frontmatter"}
	}
	line := 2
	var yml []byte
	for len(rest) > 0 {
		l, next, found := bytes.Cut(rest, []byte("\n"))
		if delimiter.Match(l) {
			return &frontmatter{yaml: yml, openLine: 1, body: string(next), bodyLine: line + 1}, nil
		}
		yml = append(yml, l...)
		if found {
			yml = append(yml, '\n')
		}
		rest = next
		line++
	}
	return nil, &Problem{Line: 1, Col: 1, Code: CodeUnterminated,
		Message: "the frontmatter opened here has no closing --- line"}
}

// decoder turns the frontmatter's YAML nodes into a Policy, collecting every
// problem on the way.
type decoder struct {
	file   string
	offset int // file line of the opening ---: YAML line 1 is file line offset+1
	lines  []lineStart
	strict bool
	budget int
	over   bool                // the node budget ran out
	active map[*yaml.Node]bool // alias targets being expanded
	probs  Problems
}

func (d *decoder) pos(n *yaml.Node) Pos {
	if n == nil || n.Line == 0 {
		return Pos{Line: d.offset, Col: 1}
	}
	if i := n.Line - 1; i < len(d.lines) {
		m := d.lines[i]
		return Pos{Line: d.offset + 1 + m.fileLine, Col: n.Column + m.col}
	}
	return Pos{Line: n.Line + d.offset, Col: n.Column}
}

// lineStart says where a YAML line starts in the file: on which line of the
// YAML text counted by "\n" (from 0), after how many characters.
type lineStart struct{ fileLine, col int }

// yamlLines maps the lines of text as YAML counts them (it also breaks lines
// at a lone "\r", U+0085, U+2028 and U+2029) to file lines, which only "\n"
// ends.
func yamlLines(text []byte) []lineStart {
	out := []lineStart{{}}
	fileLine, col := 0, 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == '\r' && i+1 < len(text) && text[i+1] == '\n':
			size = 2
			fallthrough
		case r == '\n':
			fileLine, col = fileLine+1, 0
			out = append(out, lineStart{fileLine, 0})
		case r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029:
			col++
			out = append(out, lineStart{fileLine, col})
		default:
			col++
		}
		i += size
	}
	return out
}

// valPos is the position to report a problem with the value val of key at:
// the value's, or the key's when the value is an empty (implicit null) one,
// which YAML places just after the colon.
func (d *decoder) valPos(key, val *yaml.Node) Pos {
	if val == nil || (val.Kind == yaml.ScalarNode && val.Tag == "!!null" && val.Value == "") {
		return d.pos(key)
	}
	return d.pos(val)
}

func (d *decoder) errorf(p Pos, code Code, format string, args ...any) {
	d.probs = append(d.probs, Problem{File: d.file, Line: p.Line, Col: p.Col, Code: code, Message: fmt.Sprintf(format, args...)})
}

// visit charges one node to the budget and reports whether decoding may go
// on.
func (d *decoder) visit(n *yaml.Node) bool {
	if d.over {
		return false
	}
	d.budget--
	if d.budget < 0 {
		d.over = true
		d.errorf(d.pos(n), CodeTooLarge, "the frontmatter has more than %d YAML nodes once aliases are expanded", maxNodes)
		return false
	}
	return true
}

// deref follows aliases to the node they name. It returns nil (and reports
// the problem) for an alias that refers to a node being expanded.
func (d *decoder) deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if n.Alias == nil || i > 64 || d.active[n.Alias] {
			d.errorf(d.pos(n), CodeBadValue, "alias *%s refers to a node that contains it", n.Value)
			return nil
		}
		n = n.Alias
	}
	return n
}

// enter marks n as being expanded (for alias cycle detection); leave undoes
// it.
func (d *decoder) enter(n *yaml.Node) {
	if d.active == nil {
		d.active = map[*yaml.Node]bool{}
	}
	d.active[n] = true
}

func (d *decoder) leave(n *yaml.Node) { delete(d.active, n) }

var yamlLine = regexp.MustCompile(`^yaml: (?:line \d+: )?`)

// syntaxError reports a YAML syntax error. yaml.v3's own line numbers are
// not reliable (parser errors count from 0, scanner errors from 1, and some
// errors carry none), so the line reported is the first line at which the
// YAML fails with the same error, and the column that of its first
// non-space character.
func (d *decoder) syntaxError(text []byte, err error) {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	line := errorLine(text, err.Error())
	col := 1
	if lines := bytes.Split(text, []byte("\n")); line <= len(lines) {
		l := lines[line-1]
		col += len(l) - len(bytes.TrimLeft(l, " "))
	}
	d.errorf(Pos{Line: line + d.offset, Col: col}, CodeYAMLSyntax, "%s", msg)
}

// errorLine returns the smallest k such that the first k lines of text fail
// to parse with the error message msg (a line-by-line scan for short texts, a
// bisection for long ones), or the number of lines when none does.
func errorLine(text []byte, msg string) int {
	lines := bytes.SplitAfter(text, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if len(lines) == 0 {
		return 1
	}
	fails := func(k int) bool {
		var n yaml.Node
		err := safeUnmarshal(bytes.Join(lines[:k], nil), &n)
		return err != nil && err.Error() == msg
	}
	if len(lines) <= 1000 {
		for k := 1; k < len(lines); k++ {
			if fails(k) {
				return k
			}
		}
		return len(lines)
	}
	lo, hi := 1, len(lines)
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// safeUnmarshal is yaml.Unmarshal that turns a panic into an error.
func safeUnmarshal(text []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return yaml.Unmarshal(text, n)
}
