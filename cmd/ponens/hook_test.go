package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hookRun runs `ponens hook claude-code` with input on stdin, as Claude
// Code runs a command hook.
func hookRun(t testing.TB, bin, dir string, input string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"hook", "claude-code"}, args...)...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(input)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errOut.String(), code}
}

func hookInput(event, tool, input string) string {
	return fmt.Sprintf(`{"session_id":"sess-1","transcript_path":"/home/dev/.claude/projects/-repo/sess-1.jsonl","cwd":"/repo","permission_mode":"default","hook_event_name":%q,"tool_name":%q,"tool_input":%s,"tool_use_id":"toolu_1"}`, event, tool, input)
}

// TestHookClaudeCode: a scripted session through the real binary, with
// stdin and stdout as Claude Code uses them. An edit, then a commit
// without tests is denied with the rule's reason; after a passing test
// run the commit is allowed (no answer: Claude Code's own permissions
// decide), and --explicit-allow says allow.
func TestHookClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := ponensBinary(t)
	repo, _ := filepath.Abs("../..")
	state := t.TempDir()
	args := []string{"--rules", filepath.Join(repo, "examples", "rules"), "--state", state}
	type step struct {
		event, tool, input string
		decision, reason   string
	}
	edit := `{"file_path":"/repo/refunds/calc.py","old_string":"a","new_string":"b"}`
	commit := `{"command":"git commit -am 'round half up'"}`
	tests := `{"command":"python -m pytest -q"}`
	steps := []step{
		{"PreToolUse", "Read", `{"file_path":"/repo/refunds/calc.py"}`, "", ""},
		{"PostToolUse", "Read", `{"file_path":"/repo/refunds/calc.py"}`, "", ""},
		{"PreToolUse", "Edit", edit, "", ""},
		{"PostToolUse", "Edit", edit, "", ""},
		{"PreToolUse", "Bash", commit, "deny", "ponens rule tests_before_commit: Every commit is preceded by a test run that completed. (the step would violate P(RunTests ∧ completed))"},
		{"PreToolUse", "Write", `{"file_path":"/repo/config/.env","content":"K=1"}`, "deny", "ponens rule no-env-writes: Never write .env or secret files"},
		{"PreToolUse", "Bash", tests, "", ""},
		{"PostToolUse", "Bash", tests, "", ""},
		{"PreToolUse", "Bash", commit, "", ""},
	}
	for i, s := range steps {
		r := hookRun(t, bin, t.TempDir(), hookInput(s.event, s.tool, s.input), args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("step %d (%s %s): exit %d, stderr %s", i+1, s.event, s.tool, r.code, r.stderr)
		}
		if s.decision == "" {
			if r.stdout != "" {
				t.Errorf("step %d (%s %s): answered %s, want nothing", i+1, s.event, s.tool, r.stdout)
			}
			continue
		}
		var out struct {
			HookSpecificOutput struct {
				HookEventName, PermissionDecision, PermissionDecisionReason string
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("step %d: %v: %q", i+1, err, r.stdout)
		}
		o := out.HookSpecificOutput
		if o.HookEventName != "PreToolUse" || o.PermissionDecision != s.decision || o.PermissionDecisionReason != s.reason {
			t.Errorf("step %d (%s %s): %+v, want %s: %s", i+1, s.event, s.tool, o, s.decision, s.reason)
		}
	}
	r := hookRun(t, bin, t.TempDir(), hookInput("PreToolUse", "Bash", commit), append(args, "--explicit-allow")...)
	if !strings.Contains(r.stdout, `"permissionDecision":"allow"`) {
		t.Errorf("--explicit-allow: %s", r.stdout)
	}
	// A failed test run does not count: the commit of another session
	// that only saw failing tests is denied.
	fail := strings.Replace(hookInput("PostToolUseFailure", "Bash", tests), "sess-1", "sess-2", 1)
	hookRun(t, bin, t.TempDir(), fail, args...)
	r = hookRun(t, bin, t.TempDir(), strings.Replace(hookInput("PreToolUse", "Bash", commit), "sess-1", "sess-2", 1), args...)
	if !strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
		t.Errorf("commit after failing tests: %q", r.stdout)
	}
}

func TestHookBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := ponensBinary(t)
	repo, _ := filepath.Abs("../..")
	args := []string{"--rules", filepath.Join(repo, "examples", "rules"), "--state", t.TempDir()}
	cases := []struct{ in, want string }{
		{"nope", "ponens hook claude-code: stdin: expected the hook's JSON object"},
		{`{"session_id":"s","hook_event_name":"Stop"}`, `hook_event_name: expected PreToolUse, PostToolUse or PostToolUseFailure, got "Stop"`},
		{`{"session_id":"../x","hook_event_name":"PreToolUse","tool_name":"Bash"}`, `session_id: expected a session id, got "../x"`},
		{`{"session_id":"s","hook_event_name":"PreToolUse"}`, "tool_name: expected the tool's name"},
	}
	for _, c := range cases {
		r := hookRun(t, bin, t.TempDir(), c.in, args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", c.in, r.code, r.stderr, c.want)
		}
	}
}

func TestHookInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	repo, _ := filepath.Abs("../..")
	rules := filepath.Join(dir, "rules")
	if err := os.CopyFS(rules, os.DirFS(filepath.Join(repo, "examples", "rules"))); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"permissions":{"allow":["Bash(go test:*)"]}}`+"\n"), 0o644)
	r := runBinary(t, dir, nil, "hook", "claude-code", "--install", "--dry-run", "--rules", "rules")
	if r.code != 0 || !regexp.MustCompile(`(?m)^\+ +"command": "ponens hook claude-code --rules \\"\$CLAUDE_PROJECT_DIR\\"/rules"$`).MatchString(r.stdout) || !strings.Contains(r.stdout, "(dry run: nothing written)") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if data, _ := os.ReadFile(settings); strings.Contains(string(data), "hooks") {
		t.Fatal("--dry-run wrote the settings")
	}
	r = runBinary(t, dir, nil, "hook", "claude-code", "--install", "--rules", "rules")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote "+settings) {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var got struct {
		Permissions map[string][]string
		Hooks       map[string][]struct {
			Matcher string
			Hooks   []struct{ Type, Command string }
		}
	}
	data, _ := os.ReadFile(settings)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"PreToolUse", "PostToolUse"} {
		h := got.Hooks[ev]
		if len(h) != 1 || h[0].Matcher != "*" || h[0].Hooks[0].Type != "command" || h[0].Hooks[0].Command != `ponens hook claude-code --rules "$CLAUDE_PROJECT_DIR"/rules` {
			t.Errorf("%s: %+v", ev, h)
		}
	}
	if got.Permissions["allow"][0] != "Bash(go test:*)" {
		t.Errorf("other settings lost: %s", data)
	}
	r = runBinary(t, dir, nil, "hook", "claude-code", "--install", "--rules", "rules")
	if !strings.Contains(r.stdout, "already runs") {
		t.Errorf("second install: %s", r.stdout)
	}
	// The installed command works as Claude Code runs it: through the
	// shell, in the project, with CLAUDE_PROJECT_DIR set.
	path := filepath.Dir(ponensBinary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd := exec.Command("sh", "-c", got.Hooks["PreToolUse"][0].Hooks[0].Command+" --state "+t.TempDir())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path, "CLAUDE_PROJECT_DIR="+dir)
	cmd.Stdin = strings.NewReader(hookInput("PreToolUse", "Write", `{"file_path":"/repo/.env"}`))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"permissionDecision":"deny"`) {
		t.Errorf("installed command: %v\n%s", err, out)
	}
}

// BenchmarkHookClaudeCode is the wall time of one PreToolUse call of the
// real binary (process start included) with 20 rules and a session
// history of 1,000 completed calls: what a Claude Code user waits before
// each tool call.
func BenchmarkHookClaudeCode(b *testing.B) {
	bin := benchBinary(b)
	dir := b.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte(twentyRules()), 0o644)
	state := filepath.Join(dir, "state")
	writeHistory(b, state)
	input := hookInput("PreToolUse", "Bash", `{"command":"git commit -am done"}`)
	b.ResetTimer()
	for b.Loop() {
		r := hookRun(b, bin, dir, input, "--rules", rules, "--state", state)
		if r.code != 0 {
			b.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	}
}

// writeHistory writes a history of 1,000 completed calls of session
// sess-1 into dir: reads, edits, searches, test runs and commits.
func writeHistory(b *testing.B, dir string) {
	var hist bytes.Buffer
	for i := range 1000 {
		var c string
		switch i % 5 {
		case 0:
			c = fmt.Sprintf(`{"tool":"Read","input":{"file_path":"/repo/f%d.go"},"status":"completed","ts":"2026-01-01T00:00:00Z"}`, i%50)
		case 1:
			c = fmt.Sprintf(`{"tool":"Edit","input":{"file_path":"/repo/f%d.go","old_string":"a","new_string":"b"},"status":"completed","ts":"2026-01-01T00:00:00Z"}`, i%50)
		case 2:
			c = `{"tool":"Grep","input":{"pattern":"x","path":"/repo"},"status":"completed","ts":"2026-01-01T00:00:00Z"}`
		case 3:
			c = `{"tool":"Bash","input":{"command":"go test ./..."},"status":"completed","result":"ok","ts":"2026-01-01T00:00:00Z"}`
		default:
			c = `{"tool":"Bash","input":{"command":"git commit -am step"},"status":"completed","ts":"2026-01-01T00:00:00Z"}`
		}
		hist.WriteString(c + "\n")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sess-1.calls.jsonl"), hist.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchBinary builds the binary for a benchmark.
func benchBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "ponens")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// twentyRules is a rules file of 20 rules of the kinds the examples use:
// pure temporal, scoped, with modes that decide.
func twentyRules() string {
	var sb strings.Builder
	sb.WriteString("version: 1\nenforce: true\nrules:\n")
	formulas := []string{
		"G(GitCommit → P(RunTests ∧ completed))",
		"G(EditFile → P_target(ReadFile ∨ ReadDocumentation ∨ SearchCode ∨ AnalyzeCode))",
		"G(GitCommit → (RunTests ∧ completed) S_last EditFile)",
		"G(Deploy → P(RunTests ∧ completed))",
		"G(EditFile → ¬(target = \".env\"))",
	}
	modes := []string{"deny", "observe", "suspend", "deny"}
	for i := range 20 {
		fmt.Fprintf(&sb, "  - id: rule_%02d\n    description: bench rule %d\n    formula: '%s'\n    mode: %s\n", i, i, formulas[i%len(formulas)], modes[i%len(modes)])
	}
	return sb.String()
}

// TestHookPublishes: with --publish, PostToolUse publishes the session's
// completed calls to the running service, whose worker then knows the
// run and judges a commit without tests as the local hook does.
func TestHookPublishes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	bin := ponensBinary(t)
	work := t.TempDir()
	url, _, _ := startServe(t, work)
	repo, _ := filepath.Abs("../..")
	args := []string{"--rules", filepath.Join(repo, "examples", "rules"), "--state", t.TempDir(), "--publish", "--url", url}
	session := func(s string) string { return strings.Replace(s, "sess-1", "sess-pub", 1) }
	for _, in := range []string{
		hookInput("PostToolUse", "Read", `{"file_path":"/repo/a.go"}`),
		hookInput("PostToolUse", "Edit", `{"file_path":"/repo/a.go","old_string":"a","new_string":"b"}`),
	} {
		if r := hookRun(t, bin, work, session(in), args...); r.code != 0 || !strings.Contains(r.stderr, "published") {
			t.Fatalf("PostToolUse --publish: exit %d %s", r.code, r.stderr)
		}
	}
	commit, _ := filepath.Abs("../../examples/decide/commit.json")
	var r cliResult
	for try := 0; try < 100; try++ {
		r = runBinary(t, work, nil, "decide", "--run", "sess-pub", "--url", url, commit)
		if r.code == 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.code != 1 || !strings.Contains(r.stdout, "deny by tests_before_commit") {
		t.Errorf("the service on the published session: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
}
