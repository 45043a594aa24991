package policymd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// InstallDir is where Install puts policies, relative to the working
// directory (seed 004 §8): <InstallDir>/<name>/POLICY.md.
const InstallDir = ".policies"

// InstallOptions change what Install does.
type InstallOptions struct {
	// Replace replaces an installed policy of the same name.
	Replace bool
}

// Installed says what Install did.
type Installed struct {
	Path      string // <workingDir>/.policies/<name>/POLICY.md
	Replaced  bool   // a policy of that name with other content was there
	Unchanged bool   // the same policy was there: nothing was written
}

// Install installs the policy published at source into workingDir (seed 004
// §8) and returns the path it wrote, <workingDir>/.policies/<name>/POLICY.md
// with name the policy's frontmatter name.
//
// source is, in order of precedence:
//   - a local git repository (a directory with .git, or a bare repository):
//     cloned with git clone --depth 1, so that what is installed is the
//     committed HEAD;
//   - any other local directory: read as it is;
//   - a git URL (scheme://…, user@host:path) cloned with git clone --depth 1;
//   - owner/repo, short for the GitHub repository of that name.
//
// The POLICY.md at the source's root is validated as Parse does; an invalid
// one is refused with its Problems (errors.Is(err, ErrInvalid)), and a source
// without one fails with ErrNoPolicy. An installed policy of the same name
// with other content is refused with ErrInstalled unless opts.Replace is
// set; it is then replaced (the file is written to a temporary name and
// renamed). The same content installed again changes nothing. The file is
// copied byte for byte.
func Install(ctx context.Context, source, workingDir string, opts InstallOptions) (Installed, error) {
	dir, cleanup, err := fetchSource(ctx, source)
	if err != nil {
		return Installed{}, err
	}
	defer cleanup()
	path := filepath.Join(dir, FileName)
	src, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Installed{}, fmt.Errorf("install %s: %w", source, ErrNoPolicy)
		}
		return Installed{}, fmt.Errorf("install %s: %w", source, err)
	}
	p, err := Parse(displaySource(source)+"/"+FileName, src, Options{})
	if err != nil {
		return Installed{}, fmt.Errorf("install %s: refusing an invalid policy:\n%w", source, err)
	}
	destDir := filepath.Join(workingDir, InstallDir, p.Name)
	if err := os.MkdirAll(destDir, 0o755); err != nil {
		return Installed{}, fmt.Errorf("install %s: %w", source, err)
	}
	dest := filepath.Join(destDir, FileName)
	res := Installed{Path: dest}
	if old, err := os.ReadFile(dest); err == nil {
		if bytes.Equal(old, src) {
			res.Unchanged = true
			return res, nil
		}
		if !opts.Replace {
			return res, fmt.Errorf("install %s: %s: %w", source, dest, ErrInstalled)
		}
		res.Replaced = true
	}
	if err := writeFileAtomic(dest, src); err != nil {
		return Installed{}, fmt.Errorf("install %s: %w", source, err)
	}
	return res, nil
}

// displaySource is source without a trailing slash, for problem positions.
func displaySource(source string) string {
	if s := strings.TrimRight(source, "/"); s != "" {
		return s
	}
	return source
}

// fetchSource returns a local directory holding the source's files, and a
// function removing whatever was fetched.
func fetchSource(ctx context.Context, source string) (string, func(), error) {
	nothing := func() {}
	if source == "" {
		return "", nothing, errors.New("install: empty source")
	}
	if fi, err := os.Stat(source); err == nil {
		if !fi.IsDir() {
			return "", nothing, fmt.Errorf("install %s: not a directory", source)
		}
		if !isGitRepo(source) {
			return source, nothing, nil
		}
		abs, err := filepath.Abs(source)
		if err != nil {
			return "", nothing, fmt.Errorf("install %s: %w", source, err)
		}
		return clone(ctx, source, "file://"+filepath.ToSlash(abs))
	}
	url, ok := gitURL(source)
	if !ok {
		return "", nothing, fmt.Errorf("install %s: not a local directory, a git URL or owner/repo", source)
	}
	return clone(ctx, source, url)
}

// isGitRepo reports whether dir is a git working tree root or a bare
// repository.
func isGitRepo(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return true
	}
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

var (
	schemeURL = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
	scpURL    = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)
	ownerRepo = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

// gitURL returns the git URL a non-local source stands for.
func gitURL(source string) (string, bool) {
	switch {
	case strings.HasPrefix(source, "-"):
		return "", false
	case schemeURL.MatchString(source), scpURL.MatchString(source):
		return source, true
	case ownerRepo.MatchString(source) && !strings.HasPrefix(source, ".") && !strings.Contains(source, ".."):
		return "https://github.com/" + strings.TrimSuffix(source, ".git") + ".git", true
	}
	return "", false
}

// clone runs git clone --depth 1 of url into a temporary directory.
func clone(ctx context.Context, source, url string) (string, func(), error) {
	tmp, err := os.MkdirTemp("", "ponens-policy-install-")
	if err != nil {
		return "", func() {}, fmt.Errorf("install %s: %w", source, err)
	}
	cleanup := func() { os.RemoveAll(tmp) }
	dest := filepath.Join(tmp, "src")
	cmd := exec.CommandContext(ctx, "git", "clone", "--depth", "1", "--quiet", "--", url, dest)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", func() {}, fmt.Errorf("install %s: git clone %s failed: %s", source, url, msg)
	}
	return dest, cleanup, nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".POLICY.md.*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
