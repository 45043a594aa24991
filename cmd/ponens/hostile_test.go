package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileFiles writes inputs built to break readers into dir: JSON nested
// far deeper than any trace, NUL bytes and invalid UTF-8, formulas nested
// or chained to blow up a parser, and YAML alias bombs in a rules file and
// in a POLICY.md. Each is small enough to pass the size limits, so that it
// reaches the parser.
func hostileFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	const deep = 100_000
	nested := strings.Repeat("[", deep) + strings.Repeat("]", deep)
	nestedObj := strings.Repeat(`{"a":`, deep/2) + "1" + strings.Repeat("}", deep/2)
	event := func(seq int, action string) string {
		return fmt.Sprintf(`{"v":1,"runId":"h","seq":%d,"ts":"2026-01-01T00:00:00Z","type":"action","action":%s}`, seq, action)
	}
	start := `{"v":1,"runId":"h","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{"agent":"a"}}`
	bomb := "a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n"
	for i, prev := 'b', 'a'; i <= 'j'; i, prev = i+1, i {
		bomb += fmt.Sprintf("%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	files := map[string]string{
		"nested-array.jsonl":  start + "\n" + event(2, `{"id":1,"type":"ReadFile","payload":`+nested+`}`) + "\n",
		"nested-object.jsonl": start + "\n" + event(2, `{"id":1,"type":"ReadFile","payload":`+nestedObj+`}`) + "\n",
		"nested.json":         `{"trace_id":"h","actions":[{"id":1,"type":"ReadFile","payload":` + nested + `}]}`,
		"nul-utf8.jsonl":      start + "\n" + event(2, "{\"id\":1,\"type\":\"Read\x00File\",\"target\":\"\xff\xfe\x00.env\"}") + "\n" + "\x00\x00\x00\n",
		"nul.json":            "{\"trace_id\":\"h\x00\",\"actions\":[{\"id\":1,\"type\":\"\xc3\x28\"}]}\x00",
		"deep-formula.yaml":   "version: 1\nrules:\n  - id: deep\n    formula: '" + strings.Repeat("G(", 20_000) + "A" + strings.Repeat(")", 20_000) + "'\n",
		"neg-formula.yaml":    "version: 1\nrules:\n  - id: neg\n    formula: '" + strings.Repeat("¬", 100_000) + "A'\n",
		"wide-formula.yaml":   "version: 1\nrules:\n  - id: wide\n    formula: 'G(" + strings.Repeat("A ∧ ", 100_000) + "A)'\n",
		"paren-formula.yaml":  "version: 1\nrules:\n  - id: paren\n    formula: '" + strings.Repeat("(", 100_000) + "'\n",
		"alias-bomb.yaml":     bomb + "version: 1\nrules:\n  - id: x\n    formula: G(A)\n    metadata: *j\n",
		"nested-rules.json":   `{"policies":[{"policy_id":"x","formula":"G(A)","meta":` + nestedObj + `}]}`,
		"POLICY.md":           "---\n" + bomb + "name: bomb\n---\n# Bomb\n",
		"utf8-POLICY.md":      "---\nname: \xff\xfe\x00\ndescription: \"\xc3\x28\"\n---\n# \x00\n",
	}
	out := map[string]string{}
	for name, body := range files {
		d := filepath.Join(dir, strings.TrimSuffix(name, "POLICY.md")+"dir")
		if !strings.HasSuffix(name, "POLICY.md") {
			d = dir
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name)
		if strings.HasSuffix(name, "POLICY.md") {
			p = filepath.Join(d, "POLICY.md")
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// TestHostileInputs: every reader of files (traces, reference traces,
// rules files, POLICY.md, agent transcripts and exports) is given inputs
// built to break parsers. No process panics, dies of a signal or takes
// more than 1 GiB; each answers with one of the contract's exit codes, a
// refusal says which command refused (the line prefixed with it; `policy
// check` lists the problems before it), and no message echoes an input
// whole.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := ponensBinary(t)
	dir := t.TempDir()
	files := hostileFiles(t, dir)
	repo, _ := filepath.Abs("../..")
	rules, fleet := filepath.Join(repo, "examples", "rules"), filepath.Join(repo, "examples", "traces", "fleet.jsonl")
	intent := filepath.Join(repo, "examples", "decide", "intent.json")
	out := t.TempDir()
	for name, f := range files {
		for _, args := range [][]string{
			{"policy", "check", f},
			{"policy", "validate", f},
			{"check", "--out", out, "--rules", rules, f},
			{"check", "--out", out, "--rules", f, fleet},
			{"check", "--out", out, f},
			{"eval", "--rules", f, fleet},
			{"eval", "--rules", rules, f},
			{"decide", "--rules", rules, "--history", f, intent},
			{"import", "claude-code", f},
			{"import", "codex", f},
			{"import", "langfuse", f},
			{"import", "otlp", f},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			timedOut := ctx.Err() != nil
			cancel()
			what := fmt.Sprintf("%s: ponens %s", name, strings.Join(args, " "))
			if cmd.ProcessState == nil {
				t.Fatalf("%s: %v", what, err)
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			code := cmd.ProcessState.ExitCode()
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
			switch {
			case timedOut:
				t.Errorf("%s: still running after a minute", what)
			case ws.Signaled():
				t.Errorf("%s: killed by %v\n%.2000s", what, ws.Signal(), stderr.String())
			case code < 0 || code > exitBadInput:
				t.Errorf("%s: exit %d\n%.2000s", what, code, stderr.String())
			case strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "goroutine "):
				t.Errorf("%s: panicked\n%.2000s", what, stderr.String())
			case code == exitBadInput && !strings.HasPrefix(stderr.String(), "ponens ") && !strings.Contains(stderr.String(), "\nponens "):
				t.Errorf("%s: a refusal without the command's prefix:\n%.2000s", what, stderr.String())
			case rss > 1<<20:
				t.Errorf("%s: %d MiB resident", what, rss>>10)
			}
			if len(stderr.String()) > 64<<10 {
				t.Errorf("%s: %d bytes on stderr: an error message must quote an excerpt, not the input", what, stderr.Len())
			}
		}
	}
}
