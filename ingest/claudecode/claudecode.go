package claudecode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
)

// line is the part of a transcript line the importer reads.
type line struct {
	Type      string          `json:"type"`
	UUID      string          `json:"uuid"`
	SessionID string          `json:"sessionId"`
	Timestamp string          `json:"timestamp"`
	Cwd       string          `json:"cwd"`
	Version   string          `json:"version"`
	GitBranch string          `json:"gitBranch"`
	Message   json.RawMessage `json:"message"`
}

type message struct {
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Importer reads a Claude Code transcript line by line. A tool_use becomes
// an action when its tool_result arrives (or, for calls that never got
// one, at Flush), so the run's seq follows the order in which calls
// completed. It is not safe for concurrent use.
type Importer struct {
	table   *mapping.Table
	name    string
	sess    *mapping.Session
	pending []*pendingCall
	// Explain, when set, receives one sentence per input record: the
	// events it became or why it became none.
	Explain func(line int, what string)
	// Skipped counts the records that became no event, by kind.
	Skipped map[string]int
	prompt  string
}

type pendingCall struct {
	call mapping.Call
	line int
}

// NewImporter reads the transcript called name (for messages) with the
// mapping table t.
func NewImporter(t *mapping.Table, name string) *Importer {
	return &Importer{table: t, name: name, Skipped: map[string]int{}}
}

// Session is the run's session, nil before the first line that names one.
func (im *Importer) Session() *mapping.Session { return im.sess }

func (im *Importer) explain(n int, format string, args ...any) {
	if im.Explain != nil {
		im.Explain(n, fmt.Sprintf(format, args...))
	}
}

func (im *Importer) skip(n int, kind, why string) {
	im.Skipped[kind]++
	im.explain(n, "%s: skipped: %s", kind, why)
}

// Line reads line n of the transcript and returns the events it completes.
// A line that is not a JSON object is an error naming the file, line and
// column; a line of a kind that holds no tool call is counted and skipped.
func (im *Importer) Line(n int, data []byte) ([]schema.Event, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil
	}
	var l line
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%s:%d:%d: expected a JSON object (a transcript line): %v", im.name, n, jsonColumn(err), err)
	}
	var out []schema.Event
	if im.sess == nil {
		if l.SessionID == "" {
			im.skip(n, kindOf(l.Type), "before the first line naming a session")
			return nil, nil
		}
		im.sess = mapping.NewSession(im.table, l.SessionID, l.Cwd)
		start := &schema.RunStart{Agent: "claude-code", Trigger: json.RawMessage(`{"type":"UserRequest"}`),
			Extra: map[string]json.RawMessage{}}
		for k, v := range map[string]string{"cwd": l.Cwd, "version": l.Version, "gitBranch": l.GitBranch, "sessionId": l.SessionID} {
			if v != "" {
				start.Extra[k], _ = json.Marshal(v)
			}
		}
		ev := im.sess.Start(parseTime(l.Timestamp), start)
		im.explain(n, "session %s: run.start (seq %d)", l.SessionID, ev.Seq)
		out = append(out, ev)
	}
	switch l.Type {
	case "assistant":
		im.assistant(n, &l)
	case "user":
		out = append(out, im.user(n, &l)...)
	default:
		im.skip(n, kindOf(l.Type), "holds no tool call")
	}
	return out, nil
}

func kindOf(t string) string {
	if t == "" {
		return "(no type)"
	}
	return t
}

func (im *Importer) blocks(n int, l *line) ([]block, bool) {
	var m message
	if err := json.Unmarshal(l.Message, &m); err != nil || len(m.Content) == 0 {
		return nil, false
	}
	var bs []block
	if err := json.Unmarshal(m.Content, &bs); err != nil {
		return nil, false // a plain-text message
	}
	return bs, true
}

func (im *Importer) assistant(n int, l *line) {
	bs, ok := im.blocks(n, l)
	calls := 0
	for _, b := range bs {
		if b.Type != "tool_use" {
			continue
		}
		calls++
		c := mapping.Call{ID: b.ID, Tool: b.Name, Input: b.Input, TS: parseTime(l.Timestamp)}
		im.pending = append(im.pending, &pendingCall{call: c, line: n})
		im.explain(n, "tool_use %s %s: waits for its result (%s)", b.ID, b.Name, im.sess.Describe(&c))
	}
	if !ok || calls == 0 {
		im.skip(n, "assistant text", "no tool_use block")
	}
}

func (im *Importer) user(n int, l *line) []schema.Event {
	bs, ok := im.blocks(n, l)
	var out []schema.Event
	results := 0
	for _, b := range bs {
		if b.Type != "tool_result" {
			continue
		}
		results++
		i := im.find(b.ToolUseID)
		if i < 0 {
			im.skip(n, "tool_result", fmt.Sprintf("no tool_use %s before it", b.ToolUseID))
			continue
		}
		p := im.pending[i]
		im.pending = append(im.pending[:i], im.pending[i+1:]...)
		p.call.Status = mapping.StatusCompleted
		if b.IsError {
			p.call.Status = mapping.StatusFailed
		}
		p.call.Result = resultText(b.Content)
		p.call.Done = parseTime(l.Timestamp)
		evs := im.sess.Call(&p.call)
		for _, ev := range evs {
			im.explain(n, "tool_result %s of line %d: seq %d action %d %s%s (%s)", b.ToolUseID, p.line, ev.Seq, ev.Action.ID, ev.Action.Type, targetOf(ev.Action), ev.Action.Status)
		}
		out = append(out, evs...)
	}
	if !ok || results == 0 {
		im.skip(n, "user text", "no tool_result block")
	}
	return out
}

func (im *Importer) find(id string) int {
	for i, p := range im.pending {
		if p.call.ID == id {
			return i
		}
	}
	return -1
}

// Flush returns the actions of the calls that have no result yet, without
// a status, in the order they were made.
func (im *Importer) Flush() []schema.Event {
	var out []schema.Event
	for _, p := range im.pending {
		evs := im.sess.Call(&p.call)
		for _, ev := range evs {
			im.explain(p.line, "tool_use %s has no result: seq %d action %d %s%s (no status)", p.call.ID, ev.Seq, ev.Action.ID, ev.Action.Type, targetOf(ev.Action))
		}
		out = append(out, evs...)
	}
	im.pending = nil
	return out
}

// Pending is the number of calls waiting for their result.
func (im *Importer) Pending() int { return len(im.pending) }

func targetOf(a *schema.Action) string {
	if len(a.Evidence) > 0 {
		return " " + a.Evidence[0].Ref
	}
	return ""
}

// resultText is a tool_result's content: a string, or the text of its
// text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return ""
	}
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// jsonColumn is the byte column of a JSON syntax error, 1 when unknown.
func jsonColumn(err error) int64 {
	if se, ok := err.(*json.SyntaxError); ok {
		return se.Offset
	}
	return 1
}

// MaxLine bounds a transcript line, in bytes.
const MaxLine = 64 << 20

// Import reads a whole transcript: the events of its one run, calls left
// without a result at the end.
func Import(r io.Reader, name string, t *mapping.Table, explain func(int, string)) ([]schema.Event, map[string]int, error) {
	im := NewImporter(t, name)
	im.Explain = explain
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxLine)
	var out []schema.Event
	n := 0
	for sc.Scan() {
		n++
		evs, err := im.Line(n, sc.Bytes())
		if err != nil {
			return nil, nil, err
		}
		out = append(out, evs...)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s:%d: %v", name, n+1, err)
	}
	if im.sess == nil {
		return nil, nil, fmt.Errorf("%s: no line names a session (sessionId): not a Claude Code transcript", name)
	}
	return append(out, im.Flush()...), im.Skipped, nil
}

// SkippedString renders skip counts as "3 summary, 1 system".
func SkippedString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}
