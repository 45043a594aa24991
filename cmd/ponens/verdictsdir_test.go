package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckUmaskAndVerdictsDir: `ponens check` files honour the umask
// (verdict streams quote event payloads), and --verdicts-dir puts the
// streams there, not beside the traces, with summary.json pointing at them.
func TestCheckUmaskAndVerdictsDir(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	for _, tc := range []struct {
		umask string
		mode  os.FileMode
	}{{"077", 0o600}, {"022", 0o644}} {
		t.Run(tc.umask, func(t *testing.T) {
			dir := t.TempDir()
			trace := filepath.Join(dir, "traces", "verify_proved.json")
			data, err := os.ReadFile(filepath.Join(repo, "examples", "traces", "verify_proved.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(trace), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(trace, data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, vd := filepath.Join(dir, "out"), filepath.Join(dir, "verdicts")
			cmd := exec.Command("sh", "-c", `umask `+tc.umask+` && exec "$@"`, "sh", ponensBinary(t), "check",
				"--rules", filepath.Join(repo, "examples", "rules"), "--out", out, "--verdicts-dir", vd, trace)
			if b, err := cmd.CombinedOutput(); err != nil {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitViolated {
					t.Fatalf("check: %v\n%s", err, b)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "traces", "verify_proved.verdicts.jsonl")); !os.IsNotExist(err) {
				t.Errorf("a verdict stream beside the trace despite --verdicts-dir (%v)", err)
			}
			stream := filepath.Join(vd, "verify_proved.verdicts.jsonl")
			summary := filepath.Join(out, "summary.json")
			for _, f := range []string{stream, summary} {
				st, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != tc.mode {
					t.Errorf("%s: mode %v under umask %s, want %v", f, st.Mode().Perm(), tc.umask, tc.mode)
				}
			}
			var s struct {
				Traces []struct {
					Verdicts string `json:"verdicts"`
				} `json:"traces"`
			}
			b, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &s); err != nil || len(s.Traces) != 1 {
				t.Fatalf("summary: %v %s", err, b)
			}
			if got := filepath.Join(out, filepath.FromSlash(s.Traces[0].Verdicts)); got != stream {
				t.Errorf("summary points at %s (%s), want %s", got, s.Traces[0].Verdicts, stream)
			}
			if b, _ := os.ReadFile(stream); !strings.Contains(string(b), `"formatVersion":1`) {
				t.Errorf("verdict stream %q", b)
			}
		})
	}
}
