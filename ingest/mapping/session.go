package mapping

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/ponens/ponens/schema"
)

// Call is one tool call of an agent, as an importer read it.
type Call struct {
	// ID is the agent's id of the call (Claude Code's tool_use id, Codex's
	// call_id, a span id), kept in the action's extra as callId.
	ID string `json:"id,omitempty"`
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Input is the call's arguments, a JSON object (anything else is kept
	// under payload.input).
	Input json.RawMessage `json:"input,omitempty"`
	// Command is the shell command the call runs, when the importer knows
	// it; else the input's command field (a string, or an argv list joined
	// with spaces) is used.
	Command string `json:"command,omitempty"`
	// Files are the files the call touches, when the importer knows them
	// (apply_patch); each becomes an action of its own.
	Files []string `json:"files,omitempty"`
	// NewFiles are those of Files the call creates.
	NewFiles []string `json:"newFiles,omitempty"`
	// Status is completed, failed, or empty while the call has no result.
	Status string `json:"status,omitempty"`
	// Result is the call's output, shortened into result_summary.
	Result string `json:"result,omitempty"`
	// TS is when the call was made: the action's timestamp.
	TS time.Time `json:"ts"`
	// Done is when its result arrived: the event's ts (TS when zero).
	Done time.Time `json:"done,omitzero"`
}

// Action statuses a call can have.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// MaxSummary bounds the result_summary of an action, in bytes.
const MaxSummary = 200

// Session turns the calls of one agent session into the event stream of
// one run: seq from 1, action ids from 1, and the lineage of the files the
// session edits. It is not safe for concurrent use.
type Session struct {
	table *Table
	runID string
	cwd   string

	seq      uint64
	actionID int64
	lastTS   time.Time
	// versions counts the SourceCode versions of each file.
	versions map[string]int
	// seen holds the files read or edited so far.
	seen map[string]bool
	// dirty lists the files edited since the last commit, in edit order.
	dirty []string
	tests int
}

// NewSession starts the run runID. cwd, when given, is the session's
// working directory: absolute paths under it become relative to it.
func NewSession(t *Table, runID, cwd string) *Session {
	return &Session{table: t, runID: runID, cwd: cwd, versions: map[string]int{}, seen: map[string]bool{}}
}

// RunID is the id of the session's run.
func (s *Session) RunID() string { return s.runID }

func (s *Session) event(ts time.Time, typ schema.EventType) schema.Event {
	if ts.IsZero() {
		ts = s.lastTS
	}
	if ts.IsZero() {
		ts = time.Unix(0, 0).UTC()
	}
	s.lastTS = ts
	s.seq++
	return schema.Event{V: schema.EnvelopeVersion, RunID: s.runID, Seq: s.seq, TS: ts.UTC(), Type: typ}
}

// Start is the run.start event.
func (s *Session) Start(ts time.Time, start *schema.RunStart) schema.Event {
	ev := s.event(ts, schema.TypeRunStart)
	ev.Start = start
	return ev
}

// End is the closing event of the run: typ is run.finish, run.error or
// run.cancel.
func (s *Session) End(ts time.Time, typ schema.EventType, message string) schema.Event {
	ev := s.event(ts, typ)
	ev.End = &schema.RunEnd{Message: message}
	return ev
}

// Telemetry is a telemetry event carrying v.
func (s *Session) Telemetry(ts time.Time, v json.RawMessage) schema.Event {
	ev := s.event(ts, schema.TypeTelemetry)
	ev.Telemetry = v
	return ev
}

// Call records a call and returns its action events: one, or one per file
// for a call that touches several. Their produced artifacts are inline.
func (s *Session) Call(c *Call) []schema.Event {
	acts := s.actions(c, true)
	evs := make([]schema.Event, len(acts))
	ts := c.Done
	if ts.IsZero() {
		ts = c.TS
	}
	for i := range acts {
		evs[i] = s.event(ts, schema.TypeAction)
		evs[i].Action = &acts[i]
	}
	return evs
}

// Propose returns the actions c would become as the run's next steps,
// without recording it: what a decision judges before the call runs.
func (s *Session) Propose(c *Call) []schema.Action {
	return s.actions(c, false)
}

// Describe says which rule a call matches, for --explain.
func (s *Session) Describe(c *Call) string {
	r := s.table.Match(c.Tool, s.command(c, decodeInput(c)))
	if r == nil {
		return "no rule matches"
	}
	return fmt.Sprintf("rule %s:%d (%s)", r.File, r.Line, r.Type)
}

func (s *Session) command(c *Call, input map[string]json.RawMessage) string {
	if c.Command != "" {
		return c.Command
	}
	raw, ok := input["command"]
	if !ok {
		raw = input["cmd"]
	}
	if len(raw) == 0 {
		return ""
	}
	var str string
	if segjson.Unmarshal(raw, &str) == nil {
		return str
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return ShellJoin(argv)
	}
	return ""
}

// decodeInput is the call's input object; input that is not an object is
// kept under "input".
func decodeInput(c *Call) map[string]json.RawMessage {
	input := map[string]json.RawMessage{}
	if len(c.Input) > 0 && segjson.Unmarshal(c.Input, &input) != nil {
		input = map[string]json.RawMessage{"input": c.Input}
	}
	return input
}

// ShellJoin joins an argv list into one command line; `bash -lc SCRIPT`
// and `sh -c SCRIPT` become SCRIPT.
func ShellJoin(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") && strings.HasSuffix(argv[0], "sh") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// actions maps c; record keeps its lineage in the session.
func (s *Session) actions(c *Call, record bool) []schema.Action {
	input := decodeInput(c)
	cmd := s.command(c, input)
	r := s.table.Match(c.Tool, cmd)
	if r == nil {
		r = &Rule{Type: "ToolCall", Category: "activity", File: "none"}
	}
	targets := c.Files
	if len(targets) == 0 {
		if t := s.target(r, input, cmd); t != "" {
			targets = []string{t}
		}
	}
	if len(targets) == 0 {
		targets = []string{""}
	}
	// Proposals judge a copy of the lineage.
	st := s
	if !record {
		st = s.clone()
	}
	out := make([]schema.Action, 0, len(targets))
	for _, target := range targets {
		out = append(out, st.action(c, r, cmd, input, target))
	}
	return out
}

func (s *Session) clone() *Session {
	c := *s
	c.versions = make(map[string]int, len(s.versions))
	for k, v := range s.versions {
		c.versions[k] = v
	}
	c.seen = make(map[string]bool, len(s.seen))
	for k, v := range s.seen {
		c.seen[k] = v
	}
	c.dirty = slices.Clone(s.dirty)
	return &c
}

// target is the command's "target" group when the rule's command
// pattern has one, else the first of the rule's target fields the input has, as a
// path relative to the session's directory when it lies under it.
func (s *Session) target(r *Rule, input map[string]json.RawMessage, cmd string) string {
	if i := r.commandTarget(); i > 0 {
		if m := r.command.FindStringSubmatch(cmd); m != nil && m[i] != "" {
			return s.rel(m[i])
		}
	}
	for _, f := range r.Target {
		var v string
		if segjson.Unmarshal(input[f], &v) == nil && v != "" {
			return s.rel(v)
		}
	}
	return ""
}

func (s *Session) rel(p string) string {
	if s.cwd == "" || !filepath.IsAbs(p) {
		return filepath.ToSlash(p)
	}
	if rel, err := filepath.Rel(s.cwd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(p)
}

func (s *Session) action(c *Call, r *Rule, cmd string, input map[string]json.RawMessage, target string) schema.Action {
	s.actionID++
	a := schema.Action{
		ID: s.actionID, Type: r.Type, Category: r.Category, Status: c.Status,
		Capability: r.Capability, ToolName: c.Tool, ActionType: "tool",
		Label: label(c.Tool, cmd, target), ResultSummary: summary(c.Result),
	}
	if !c.TS.IsZero() {
		a.Timestamp = c.TS.UTC().Format(time.RFC3339Nano)
	}
	isNew := target != "" && !s.seen[target]
	if len(c.Files) > 0 {
		isNew = slices.Contains(c.NewFiles, target)
	}
	if r.TypeIfNew != "" && isNew {
		a.Type = r.TypeIfNew
	}
	payload := make(map[string]json.RawMessage, len(input)+2)
	for k, v := range input {
		payload[k] = v
	}
	if target != "" {
		a.Evidence = []schema.Evidence{{Type: "FileRef", Ref: target}}
		payload["path"] = jsonString(target)
		s.seen[target] = true
	}
	if cmd != "" {
		payload["command"] = jsonString(cmd)
	}
	a.Payload, _ = segjson.Marshal(payload)
	if c.ID != "" {
		a.Extra = map[string]json.RawMessage{"callId": jsonString(c.ID)}
	}
	s.lineage(&a, r.Lineage, target, cmd)
	return a
}

// lineage adds the artifacts an action consumes and produces.
func (s *Session) lineage(a *schema.Action, kind Lineage, target, cmd string) {
	id := a.ID
	switch kind {
	case LineageEdit:
		if target == "" || a.Status == StatusFailed {
			return
		}
		v := s.versions[target]
		art := schema.Artifact{ID: versionID(target, v+1), Type: "SourceCode", Name: target, ProducerActionID: &id}
		if v > 0 {
			prev := versionID(target, v)
			art.DerivedFrom, art.Supersedes = []string{prev}, []string{prev}
			a.Inputs = []string{prev}
		}
		a.Artifacts = []schema.Artifact{art}
		a.Outputs = []string{art.ID}
		s.versions[target] = v + 1
		if !slices.Contains(s.dirty, target) {
			s.dirty = append(s.dirty, target)
		}
	case LineageTest:
		a.Inputs = s.current()
		s.tests++
		status := "passed"
		switch a.Status {
		case StatusFailed:
			status = "failed"
		case "":
			status = "unknown"
		}
		art := schema.Artifact{ID: fmt.Sprintf("test:%d", s.tests), Type: "TestResult", Name: cmd, ProducerActionID: &id,
			DerivedFrom: a.Inputs, Payload: mustJSON(map[string]any{"status": status, "command": cmd})}
		a.Artifacts = []schema.Artifact{art}
		a.Outputs = []string{art.ID}
	case LineageCommit:
		a.Inputs = s.current()
		if a.Status != StatusFailed {
			s.dirty = nil
		}
	}
}

// current is the latest version of each file edited since the last commit.
func (s *Session) current() []string {
	out := make([]string, 0, len(s.dirty))
	for _, f := range s.dirty {
		out = append(out, versionID(f, s.versions[f]))
	}
	return out
}

func versionID(file string, v int) string { return fmt.Sprintf("src:%s@%d", file, v) }

func label(tool, cmd, target string) string {
	switch {
	case cmd != "":
		return tool + ": " + shorten(cmd, 120)
	case target != "":
		return tool + " " + target
	}
	return tool
}

func summary(result string) string { return shorten(strings.TrimSpace(result), MaxSummary) }

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
