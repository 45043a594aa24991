package claudecode

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/ponens/ponens/ingest/mapping"
)

// The hook events the hook command answers.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
)

// HookInput is the JSON Claude Code writes on a command hook's stdin for
// the tool events.
type HookInput struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	ToolResponse   json.RawMessage `json:"tool_response"`
	Error          string          `json:"error"`
}

// DecodeHookInput reads a hook's input and checks the fields the hook
// needs; an error names the field and what was expected.
func DecodeHookInput(r io.Reader) (*HookInput, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxLine))
	if err != nil {
		return nil, err
	}
	var in HookInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("stdin: expected the hook's JSON object: %v", err)
	}
	switch {
	case in.HookEventName != PreToolUse && in.HookEventName != PostToolUse && in.HookEventName != PostToolUseFailure:
		return nil, fmt.Errorf("stdin: hook_event_name: expected PreToolUse, PostToolUse or PostToolUseFailure, got %q", in.HookEventName)
	case in.SessionID == "" || strings.ContainsAny(in.SessionID, `/\`) || in.SessionID == "." || in.SessionID == "..":
		return nil, fmt.Errorf("stdin: session_id: expected a session id, got %q", in.SessionID)
	case in.ToolName == "":
		return nil, errors.New("stdin: tool_name: expected the tool's name")
	}
	return &in, nil
}

// Call is the tool call the input describes, made at now. After the tool
// ran (PostToolUse) it is completed, unless the response says it failed;
// PostToolUseFailure is failed.
func (in *HookInput) Call(now time.Time) mapping.Call {
	c := mapping.Call{ID: in.ToolUseID, Tool: in.ToolName, Input: in.ToolInput, TS: now}
	switch in.HookEventName {
	case PostToolUse:
		c.Status = mapping.StatusCompleted
		var resp struct {
			IsError     bool `json:"is_error"`
			Interrupted bool `json:"interrupted"`
			Success     *bool
		}
		if json.Unmarshal(in.ToolResponse, &resp) == nil && (resp.IsError || resp.Interrupted || resp.Success != nil && !*resp.Success) {
			c.Status = mapping.StatusFailed
		}
		c.Result = responseText(in.ToolResponse)
	case PostToolUseFailure:
		c.Status = mapping.StatusFailed
		c.Result = in.Error
	}
	return c
}

// responseText is a short text of a tool response: its stdout, its
// content, or the JSON itself.
func responseText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var r struct {
		Stdout  string `json:"stdout"`
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &r) == nil && (r.Stdout != "" || r.Content != "") {
		return r.Stdout + r.Content
	}
	return string(raw)
}

// HookOutput is the JSON a PreToolUse hook answers with.
type HookOutput struct {
	HookSpecificOutput PreToolUseOutput `json:"hookSpecificOutput"`
}

// PreToolUseOutput is the hook-specific part of a PreToolUse answer.
type PreToolUseOutput struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"` // allow, deny or ask
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// Answer is the PreToolUse answer with decision (allow, deny or ask).
func Answer(decision, reason string) HookOutput {
	return HookOutput{PreToolUseOutput{HookEventName: PreToolUse, PermissionDecision: decision, PermissionDecisionReason: reason}}
}

// StateDir is where the hook keeps the calls of each session by default:
// $XDG_STATE_HOME/ponens/claude-code, else ~/.local/state/ponens/claude-code.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "ponens", "claude-code"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "ponens", "claude-code"), nil
}

// History is the file of one session's completed calls, one JSON object
// per line, in the order they completed.
type History struct {
	Path string
}

// HistoryOf is the history of session in dir.
func HistoryOf(dir, session string) History {
	return History{Path: filepath.Join(dir, session+".calls.jsonl")}
}

// Load reads the calls; a missing file is an empty history. A line that
// does not decode is an error naming the file and line.
func (h History) Load() ([]mapping.Call, error) {
	data, err := os.ReadFile(h.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []mapping.Call
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<16), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c mapping.Call
		if err := segjson.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: expected a recorded call: %v", h.Path, n, err)
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}

// Append adds a completed call, in one write.
func (h History) Append(c *mapping.Call) error {
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.Path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(h.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
