package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/policy/policymd"
)

const pmdTestdata = "../../policy/policymd/testdata"

// runPonens runs the ponens command line with args and returns stdout,
// stderr and the exit code main would use.
func runPonens(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestPolicyValidateCommand(t *testing.T) {
	good := filepath.Join(pmdTestdata, "validate", "seed-example.good.md")
	out, _, code := runPonens(t, "policy", "validate", good)
	if code != exitOK || out != good+": valid\n" {
		t.Errorf("good file: code %d, out %q", code, out)
	}

	bad := filepath.Join(pmdTestdata, "validate", "missing-value.bad.md")
	want, err := os.ReadFile(bad + ".want")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runPonens(t, "policy", "validate", good, bad)
	wantOut := good + ": valid\n" + strings.ReplaceAll(string(want), "missing-value.bad.md:", bad+":")
	if code != exitBadInput || out != wantOut {
		t.Errorf("bad file: code %d\nout:\n%s\nwant:\n%s", code, out, wantOut)
	}
	if !strings.Contains(stderr, "1 of 2 file(s) invalid, 6 problem(s)") {
		t.Errorf("stderr: %q", stderr)
	}

	// --strict turns unknown fields into problems.
	lenient := filepath.Join(pmdTestdata, "validate", "unknown-lenient.good.md")
	if _, _, code := runPonens(t, "policy", "validate", lenient); code != exitOK {
		t.Errorf("lenient file without --strict: code %d", code)
	}
	out, _, code = runPonens(t, "policy", "validate", "--strict", lenient)
	if code != exitBadInput || !strings.Contains(out, `unknown-field: unknown field "license" in the frontmatter`) {
		t.Errorf("--strict: code %d out %s", code, out)
	}

	// --json.
	out, _, code = runPonens(t, "policy", "validate", "--json", good, bad)
	var results []struct {
		File     string             `json:"file"`
		Valid    bool               `json:"valid"`
		Problems []policymd.Problem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if code != exitBadInput || len(results) != 2 || !results[0].Valid || results[1].Valid || len(results[1].Problems) != 6 ||
		results[1].Problems[0].Line != 7 || results[1].Problems[0].Code != policymd.CodeMissingValue {
		t.Errorf("--json: code %d results %+v", code, results)
	}

	// A directory is searched for POLICY.md files.
	out, _, code = runPonens(t, "policy", "validate", filepath.Join(pmdTestdata, "golden", "wd"))
	if code != exitOK || strings.Count(out, ": valid\n") != 3 {
		t.Errorf("directory: code %d out %s", code, out)
	}
	out, _, code = runPonens(t, "policy", "validate", filepath.Join(pmdTestdata, "discover", "invalid"))
	if code != exitBadInput || !strings.Contains(out, "broken/POLICY.md:2:7: bad-value") {
		t.Errorf("invalid directory: code %d out %s", code, out)
	}

	// Usage errors.
	if _, _, code := runPonens(t, "policy", "validate"); code != exitBadInput {
		t.Errorf("no path: code %d", code)
	}
	nope := filepath.Join(t.TempDir(), "nope.md")
	if out, stderr, code := runPonens(t, "policy", "validate", nope); code != exitBadInput || out != nope+": not-found: no such file or directory\n" ||
		!strings.Contains(stderr, "1 of 1 file(s) invalid, 1 problem(s)") {
		t.Errorf("missing file: code %d out %q stderr %q", code, out, stderr)
	}
	// A POLICY.md found in a directory that cannot be read: a problem of its own.
	dangling := t.TempDir()
	if err := os.Symlink(filepath.Join(dangling, "gone"), filepath.Join(dangling, "POLICY.md")); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runPonens(t, "policy", "validate", dangling); code != exitBadInput || out != filepath.Join(dangling, "POLICY.md")+": not-found: no such file or directory\n" {
		t.Errorf("unreadable POLICY.md: code %d out %q", code, out)
	}
	if _, _, code := runPonens(t, "policy", "validate", t.TempDir()); code != exitBadInput {
		t.Errorf("empty directory: code %d", code)
	}
}

func TestPolicyContextAndCodexCommands(t *testing.T) {
	wd := filepath.Join(pmdTestdata, "golden", "wd")
	pols, err := policymd.Load(wd, policymd.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"policy", "context", "--dir", wd}, policymd.BuildPoliciesContext(pols)},
		{[]string{"policy", "context", "--dir", wd, "--agent", "payment-bot"}, policymd.BuildAgentPoliciesContext(pols, "payment-bot")},
		{[]string{"policy", "codex", "execpolicy", "--dir", wd}, policymd.ToCodexExecpolicy(pols)},
		{[]string{"policy", "codex", "guardian", "--dir", wd}, policymd.ToCodexGuardianPrompt(pols)},
	}
	for _, tt := range tests {
		out, stderr, code := runPonens(t, tt.args...)
		if code != exitOK || out != tt.want || out == "" {
			t.Errorf("%v: code %d stderr %s\nout:\n%s", tt.args, code, stderr, out)
		}
	}
	// Invalid policies make these commands fail with the problems.
	_, stderr, code := runPonens(t, "policy", "context", "--dir", filepath.Join(pmdTestdata, "discover", "invalid"))
	if code != exitBadInput || !strings.Contains(stderr, "missing-field: the rule has no capability") {
		t.Errorf("invalid: code %d stderr %s", code, stderr)
	}
	// No policies: empty output, a note on stderr.
	out, stderr, code := runPonens(t, "policy", "context", "--dir", t.TempDir())
	if code != exitOK || out != "" || !strings.Contains(stderr, "no policies") {
		t.Errorf("no policies: code %d out %q stderr %q", code, out, stderr)
	}
}

func TestPolicyListCommand(t *testing.T) {
	wd := filepath.Join(pmdTestdata, "discover", "wd")
	out, _, code := runPonens(t, "policy", "list", "--dir", wd)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 12 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("list: code %d\n%s", code, out)
	}
	if f := strings.Fields(lines[5]); len(f) != 6 || f[0] != "beta" || f[4] != "2" {
		t.Errorf("beta row: %q", lines[5])
	}
	if f := strings.Fields(lines[8]); f[0] != "deploy-guard" || f[1] != "skill" || f[2] != "deploy" {
		t.Errorf("skill row: %q", lines[8])
	}

	out, _, code = runPonens(t, "policy", "list", "--dir", wd, "--json")
	var entries []struct {
		Name      string   `json:"name"`
		File      string   `json:"file"`
		Scope     string   `json:"scope"`
		AppliesTo []string `json:"appliesTo"`
		Rules     int      `json:"rules"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil || code != exitOK || len(entries) != 11 {
		t.Fatalf("list --json: code %d err %v\n%s", code, err, out)
	}
	if e := entries[7]; e.Name != "deploy-guard" || e.Scope != "skill" || len(e.AppliesTo) != 1 || e.AppliesTo[0] != "deploy" || e.Rules != 1 {
		t.Errorf("skill entry: %+v", e)
	}

	out, _, code = runPonens(t, "policy", "list", "--dir", filepath.Join(pmdTestdata, "discover", "dup"))
	if code != exitOK || !strings.Contains(out, "replaces the same-named") {
		t.Errorf("dup: code %d\n%s", code, out)
	}
	out, stderr, code := runPonens(t, "policy", "list", "--dir", filepath.Join(pmdTestdata, "discover", "invalid"))
	if code != exitBadInput || !strings.Contains(out, "fine") || !strings.Contains(stderr, "bad-value") {
		t.Errorf("invalid: code %d out %s stderr %s", code, out, stderr)
	}
}

func TestPolicyInstallCommand(t *testing.T) {
	src, wd := t.TempDir(), t.TempDir()
	content := "---\nname: cli-installed\n---\nBody.\n"
	if err := os.WriteFile(filepath.Join(src, "POLICY.md"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runPonens(t, "policy", "install", src, "--dir", wd)
	want := filepath.Join(wd, ".policies", "cli-installed", "POLICY.md")
	if code != exitOK || out != "installed "+want+"\n" {
		t.Fatalf("install: code %d out %q stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(want); string(b) != content {
		t.Errorf("installed %q", b)
	}
	// The same policy again: nothing to do.
	if out, _, code := runPonens(t, "policy", "install", src, "--dir", wd); code != exitOK || out != "unchanged "+want+" (already installed)\n" {
		t.Errorf("same again: code %d out %q", code, out)
	}
	// Another policy of that name: refused without --force, replaced with it.
	changed := "---\nname: cli-installed\n---\nChanged.\n"
	if err := os.WriteFile(filepath.Join(src, "POLICY.md"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runPonens(t, "policy", "install", src, "--dir", wd)
	if code != exitBadInput || !strings.Contains(stderr, "ponens policy install: ") || !strings.Contains(stderr, "already installed (give --force to replace it)") {
		t.Errorf("another policy of that name: code %d stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(want); string(b) != content {
		t.Errorf("a refused install changed the file: %q", b)
	}
	out, _, code = runPonens(t, "policy", "install", "--force", src, "--dir", wd)
	if b, _ := os.ReadFile(want); code != exitOK || out != "replaced  "+want+"\n" || string(b) != changed {
		t.Errorf("--force: code %d out %q file %q", code, out, b)
	}
	if err := os.WriteFile(filepath.Join(src, "POLICY.md"), []byte("---\nname: Not Valid\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runPonens(t, "policy", "install", src, "--dir", wd)
	if code != exitBadInput || !strings.Contains(stderr, "POLICY.md:2:7: bad-value") {
		t.Errorf("invalid: code %d stderr %s", code, stderr)
	}
	if _, _, code := runPonens(t, "policy", "install"); code != exitBadInput {
		t.Errorf("no source: code %d", code)
	}
}
