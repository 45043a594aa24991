package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hookEntry is one matcher entry of a settings.json hooks list.
type hookEntry struct {
	Matcher string        `json:"matcher"`
	Hooks   []hookCommand `json:"hooks"`
}

type hookCommand struct {
	Type    string `json:"type"`
	Command string `json:"command"`
}

// InstallEvents are the hook events Install registers the command for.
var InstallEvents = []string{PreToolUse, PostToolUse}

// SettingsPath is a project's shared Claude Code settings file.
func SettingsPath(dir string) string { return filepath.Join(dir, ".claude", "settings.json") }

// WithHooks returns settings (the text of a settings.json, empty for
// none) with command registered for every tool on each of
// InstallEvents, keeping every other setting. An event that already runs
// command is left alone.
func WithHooks(settings []byte, command string) ([]byte, error) {
	top := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(settings)) > 0 {
		if err := json.Unmarshal(settings, &top); err != nil {
			return nil, fmt.Errorf("expected a JSON object of settings: %v", err)
		}
	}
	hooks := map[string]json.RawMessage{}
	if raw, ok := top["hooks"]; ok {
		if err := json.Unmarshal(raw, &hooks); err != nil {
			return nil, fmt.Errorf("hooks: expected an object of hook events: %v", err)
		}
	}
	for _, ev := range InstallEvents {
		var entries []json.RawMessage
		if raw, ok := hooks[ev]; ok {
			if err := json.Unmarshal(raw, &entries); err != nil {
				return nil, fmt.Errorf("hooks.%s: expected a list of matchers: %v", ev, err)
			}
		}
		if runs(entries, command) {
			continue
		}
		e, _ := json.Marshal(hookEntry{Matcher: "*", Hooks: []hookCommand{{Type: "command", Command: command}}})
		entries = append(entries, e)
		hooks[ev], _ = json.Marshal(entries)
	}
	top["hooks"], _ = json.Marshal(hooks)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func runs(entries []json.RawMessage, command string) bool {
	for _, raw := range entries {
		var e hookEntry
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		for _, h := range e.Hooks {
			if h.Command == command {
				return true
			}
		}
	}
	return false
}

// Install registers command in dir's .claude/settings.json. It returns
// the diff of the file (empty when nothing changes) and writes the new
// settings unless dryRun.
func Install(dir, command string, dryRun bool) (string, error) {
	path := SettingsPath(dir)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	next, err := WithHooks(old, command)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	if bytes.Equal(old, next) {
		return "", nil
	}
	diff := Diff(path, string(old), string(next))
	if dryRun {
		return diff, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return diff, os.WriteFile(path, next, 0o644)
}

// Diff is a line diff of a and b in the unified style, every line shown.
func Diff(name, a, b string) string {
	x, y := lines(a), lines(b)
	// lcs[i][j] is the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			out.WriteString("+ " + y[j] + "\n")
			j++
		default:
			out.WriteString("- " + x[i] + "\n")
			i++
		}
	}
	return out.String()
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
