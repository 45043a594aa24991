package codex

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
)

// rolloutLine is one line of a rollout file.
type rolloutLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type sessionMeta struct {
	ID         string `json:"id"`
	Cwd        string `json:"cwd"`
	Originator string `json:"originator"`
	CLIVersion string `json:"cli_version"`
}

type item struct {
	Type      string          `json:"type"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Action    struct {
		Type    string   `json:"type"`
		Command []string `json:"command"`
	} `json:"action"`
}

// Importer reads a Codex CLI rollout line by line. A call becomes an
// action when its output arrives (or at Flush). It is not safe for
// concurrent use.
type Importer struct {
	table   *mapping.Table
	name    string
	sess    *mapping.Session
	pending []pendingCall
	// Explain, when set, receives one sentence per input line.
	Explain func(line int, what string)
	// Skipped counts the lines and items that became no event, by kind.
	Skipped map[string]int
}

type pendingCall struct {
	call mapping.Call
	line int
}

// NewImporter reads the rollout called name with the mapping table t.
func NewImporter(t *mapping.Table, name string) *Importer {
	return &Importer{table: t, name: name, Skipped: map[string]int{}}
}

func (im *Importer) explain(n int, format string, args ...any) {
	if im.Explain != nil {
		im.Explain(n, fmt.Sprintf(format, args...))
	}
}

func (im *Importer) skip(n int, kind, why string) {
	im.Skipped[kind]++
	im.explain(n, "%s: skipped: %s", kind, why)
}

// Line reads line n and returns the events it completes. A line that is
// not a JSON object is an error naming the file, line and column; a line
// or item of a type the importer does not know is counted and skipped.
func (im *Importer) Line(n int, data []byte) ([]schema.Event, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil
	}
	var l rolloutLine
	if err := json.Unmarshal(data, &l); err != nil {
		col := int64(1)
		if se, ok := err.(*json.SyntaxError); ok {
			col = se.Offset
		}
		return nil, fmt.Errorf("%s:%d:%d: expected a JSON object (a rollout line): %v", im.name, n, col, err)
	}
	ts, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	if l.Type == "session_meta" {
		return im.meta(n, ts, l.Payload), nil
	}
	if im.sess == nil {
		im.skip(n, kindOf(l.Type), "before session_meta")
		return nil, nil
	}
	if l.Type != "response_item" {
		im.skip(n, kindOf(l.Type), "not a response item")
		return nil, nil
	}
	var it item
	if err := json.Unmarshal(l.Payload, &it); err != nil {
		im.skip(n, "response_item", "payload is not an object")
		return nil, nil
	}
	switch it.Type {
	case "function_call", "custom_tool_call", "local_shell_call":
		im.call(n, ts, &it)
		return nil, nil
	case "function_call_output", "custom_tool_call_output":
		failed, text := outcome(it.Output)
		return im.complete(n, ts, it.CallID, failed, text), nil
	}
	im.skip(n, "response_item "+kindOf(it.Type), "holds no tool call")
	return nil, nil
}

func kindOf(t string) string {
	if t == "" {
		return "(no type)"
	}
	return t
}

func (im *Importer) meta(n int, ts time.Time, payload json.RawMessage) []schema.Event {
	var m sessionMeta
	if json.Unmarshal(payload, &m) != nil || m.ID == "" {
		im.skip(n, "session_meta", "no session id")
		return nil
	}
	if im.sess != nil {
		im.skip(n, "session_meta", "a second session_meta (the run is "+im.sess.RunID()+")")
		return nil
	}
	im.sess = mapping.NewSession(im.table, m.ID, m.Cwd)
	start := &schema.RunStart{Agent: "codex", Trigger: json.RawMessage(`{"type":"UserRequest"}`), Extra: map[string]json.RawMessage{}}
	for k, v := range map[string]string{"cwd": m.Cwd, "originator": m.Originator, "cliVersion": m.CLIVersion, "sessionId": m.ID} {
		if v != "" {
			start.Extra[k], _ = json.Marshal(v)
		}
	}
	ev := im.sess.Start(ts, start)
	im.explain(n, "session %s: run.start (seq %d)", m.ID, ev.Seq)
	return []schema.Event{ev}
}

func (im *Importer) call(n int, ts time.Time, it *item) {
	c := mapping.Call{ID: it.CallID, Tool: it.Name, TS: ts}
	switch it.Type {
	case "function_call":
		c.Input = json.RawMessage(it.Arguments)
		if !json.Valid(c.Input) {
			c.Input, _ = json.Marshal(map[string]string{"arguments": it.Arguments})
		}
		var args struct {
			Command []string `json:"command"`
			Input   string   `json:"input"`
		}
		_ = json.Unmarshal(c.Input, &args)
		switch {
		case len(args.Command) > 1 && args.Command[0] == "apply_patch":
			c.Tool = "apply_patch"
			c.Files, c.NewFiles = PatchFiles(args.Command[1])
		case it.Name == "apply_patch":
			c.Files, c.NewFiles = PatchFiles(args.Input)
		}
	case "custom_tool_call":
		c.Input, _ = json.Marshal(map[string]string{"input": it.Input})
		if it.Name == "apply_patch" {
			c.Files, c.NewFiles = PatchFiles(it.Input)
		}
	case "local_shell_call":
		c.Tool = "local_shell"
		c.Command = mapping.ShellJoin(it.Action.Command)
		c.Input, _ = json.Marshal(map[string]any{"command": it.Action.Command})
	}
	im.pending = append(im.pending, pendingCall{call: c, line: n})
	im.explain(n, "%s %s %s: waits for its output (%s)", it.Type, it.CallID, c.Tool, im.sess.Describe(&c))
}

func (im *Importer) complete(n int, ts time.Time, id string, failed bool, text string) []schema.Event {
	i := -1
	for j := range im.pending {
		if im.pending[j].call.ID == id {
			i = j
			break
		}
	}
	if i < 0 {
		im.skip(n, "output", "no call "+id+" before it")
		return nil
	}
	p := im.pending[i]
	im.pending = append(im.pending[:i], im.pending[i+1:]...)
	p.call.Status, p.call.Result, p.call.Done = mapping.StatusCompleted, text, ts
	if failed {
		p.call.Status = mapping.StatusFailed
	}
	evs := im.sess.Call(&p.call)
	for _, ev := range evs {
		im.explain(n, "output of %s (line %d): seq %d action %d %s (%s)", id, p.line, ev.Seq, ev.Action.ID, ev.Action.Type, ev.Action.Status)
	}
	return evs
}

// Flush returns the actions of the calls without output, without status.
func (im *Importer) Flush() []schema.Event {
	var out []schema.Event
	for _, p := range im.pending {
		evs := im.sess.Call(&p.call)
		for _, ev := range evs {
			im.explain(p.line, "%s has no output: seq %d action %d %s (no status)", p.call.ID, ev.Seq, ev.Action.ID, ev.Action.Type)
		}
		out = append(out, evs...)
	}
	im.pending = nil
	return out
}

var exitLine = regexp.MustCompile(`(?m)^(?:Exit code|Process exited with code):? (\d+)`)

// outcome reads a call's output: a string (plain, or JSON with
// metadata.exit_code), or an object with success or exit_code. It is
// failed for a nonzero exit code or success false.
func outcome(raw json.RawMessage) (failed bool, text string) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	var o struct {
		Output   string `json:"output"`
		Content  string `json:"content"`
		Success  *bool  `json:"success"`
		ExitCode *int   `json:"exit_code"`
		Metadata struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(s), &o) == nil {
		code := o.ExitCode
		if code == nil {
			code = o.Metadata.ExitCode
		}
		failed = code != nil && *code != 0 || o.Success != nil && !*o.Success
		if o.Output != "" || o.Content != "" {
			return failed, o.Output + o.Content
		}
		return failed, s
	}
	if m := exitLine.FindStringSubmatch(s); m != nil {
		code, _ := strconv.Atoi(m[1])
		return code != 0, s
	}
	return false, s
}

// PatchFiles lists the files an apply_patch patch touches, and those it
// adds.
func PatchFiles(patch string) (files, added []string) {
	for _, l := range strings.Split(patch, "\n") {
		l = strings.TrimSpace(l)
		for _, p := range []string{"*** Update File: ", "*** Add File: ", "*** Delete File: "} {
			if f, ok := strings.CutPrefix(l, p); ok {
				files = append(files, strings.TrimSpace(f))
				if p == "*** Add File: " {
					added = append(added, strings.TrimSpace(f))
				}
			}
		}
	}
	return files, added
}

// MaxLine bounds a rollout line, in bytes.
const MaxLine = 64 << 20

// Import reads a whole rollout.
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
		return nil, nil, fmt.Errorf("%s: no session_meta line: not a Codex rollout", name)
	}
	return append(out, im.Flush()...), im.Skipped, nil
}
