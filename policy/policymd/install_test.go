package policymd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const installable = `---
name: shared-guardrails
rules:
  - capability: file.write
    action: deny
    condition:
      field: { path: payload.path, op: includes, value: .env }
---
Shared body.
`

func TestInstallDirectory(t *testing.T) {
	src, wd := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(src, "POLICY.md"), installable)
	got, err := pathOf(Install(context.Background(), src, wd, InstallOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, ".policies", "shared-guardrails", "POLICY.md")
	if got != want {
		t.Errorf("installed at %s, want %s", got, want)
	}
	if b, _ := os.ReadFile(want); string(b) != installable {
		t.Errorf("installed content differs: %q", b)
	}
	// The installed policy is discovered (seed 004 §8: .policies/<name>/POLICY.md).
	pols, err := Load(wd, DiscoverOptions{})
	if err != nil || len(pols) != 1 || pols[0].Name != "shared-guardrails" || pols[0].Origin != OriginPolicySub {
		t.Errorf("Load after install: %v %+v", err, pols)
	}
	// The same policy again changes nothing.
	if in, err := Install(context.Background(), src, wd, InstallOptions{}); err != nil || !in.Unchanged || in.Replaced {
		t.Errorf("same policy again: %+v, %v", in, err)
	}
	// Another policy of the same name is refused, unless replacing is asked for.
	updated := strings.Replace(installable, "Shared body.", "Updated body.", 1)
	writeFile(t, filepath.Join(src, "POLICY.md"), updated)
	if _, err := Install(context.Background(), src, wd, InstallOptions{}); !errors.Is(err, ErrInstalled) {
		t.Errorf("another policy of the same name: %v, want ErrInstalled", err)
	}
	if b, _ := os.ReadFile(want); string(b) != installable {
		t.Errorf("refused install changed the file: %q", b)
	}
	if in, err := Install(context.Background(), src, wd, InstallOptions{Replace: true}); err != nil || !in.Replaced || in.Path != want {
		t.Fatalf("replace: %+v, %v", in, err)
	}
	if b, _ := os.ReadFile(want); string(b) != updated {
		t.Errorf("reinstall content: %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(want))
	if len(entries) != 1 {
		t.Errorf("leftover files after install: %v", entries)
	}
}

func TestInstallRefusesInvalid(t *testing.T) {
	src, wd := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(src, "POLICY.md"), "---\nname: Bad Name\nrules:\n  - capability: x\n---\n")
	_, err := pathOf(Install(context.Background(), src, wd, InstallOptions{}))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, want := range []string{"POLICY.md:2:7: bad-value", "POLICY.md:4:5: missing-field: the rule has no action"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, ".policies")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an invalid policy left files behind: %v", err)
	}
}

func TestInstallErrors(t *testing.T) {
	wd := t.TempDir()
	empty := t.TempDir()
	if _, err := pathOf(Install(context.Background(), empty, wd, InstallOptions{})); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("no POLICY.md: %v", err)
	}
	file := filepath.Join(t.TempDir(), "POLICY.md")
	writeFile(t, file, installable)
	if _, err := pathOf(Install(context.Background(), file, wd, InstallOptions{})); err == nil {
		t.Error("a file source was accepted")
	}
	for _, src := range []string{"", "./does/not/exist", "-rf", "not a url"} {
		if _, err := pathOf(Install(context.Background(), src, wd, InstallOptions{})); err == nil {
			t.Errorf("Install(%q) succeeded", src)
		}
	}
}

func TestGitURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"owner/repo", "https://github.com/owner/repo.git"},
		{"sidianlabs/policy.git", "https://github.com/sidianlabs/policy.git"},
		{"https://git.example.com/a/b.git", "https://git.example.com/a/b.git"},
		{"ssh://git@host/a/b", "ssh://git@host/a/b"},
		{"file:///tmp/repo", "file:///tmp/repo"},
		{"git@github.com:owner/repo.git", "git@github.com:owner/repo.git"},
		{"../repo", ""},
		{"./a/b", ""},
		{"a/b/c", ""},
		{"-owner/repo", ""},
		{"repo", ""},
	}
	for _, tt := range tests {
		got, ok := gitURL(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("gitURL(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

// gitRepo makes a git repository holding content as POLICY.md, committed.
func gitRepo(t *testing.T, content string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "POLICY.md"), content)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=ponens", "-c", "user.email=ponens@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "POLICY.md")
	git("commit", "-q", "-m", "policy")
	return dir
}

// TestInstallGitRepo: a local repository is cloned, so the committed
// POLICY.md is installed, not the working tree's.
func TestInstallGitRepo(t *testing.T) {
	repo := gitRepo(t, installable)
	writeFile(t, filepath.Join(repo, "POLICY.md"), "uncommitted change\n")
	wd := t.TempDir()
	got, err := pathOf(Install(context.Background(), repo, wd, InstallOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(got); string(b) != installable {
		t.Errorf("installed %q, want the committed file", b)
	}
}

// TestInstallGitURL clones through a file:// URL, the path a remote URL
// takes.
func TestInstallGitURL(t *testing.T) {
	repo := gitRepo(t, installable)
	wd := t.TempDir()
	url := "file://" + filepath.ToSlash(repo)
	got, err := pathOf(Install(context.Background(), url, wd, InstallOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if got != filepath.Join(wd, ".policies", "shared-guardrails", "POLICY.md") {
		t.Errorf("installed at %s", got)
	}
	// A repository that does not exist fails with git's message.
	_, err = Install(context.Background(), "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "missing")), wd, InstallOptions{})
	if err == nil || !strings.Contains(err.Error(), "git clone") {
		t.Errorf("missing repo: %v", err)
	}
}

// pathOf is the path Install wrote.
func pathOf(in Installed, err error) (string, error) { return in.Path, err }
