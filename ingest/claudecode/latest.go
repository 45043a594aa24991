package claudecode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ProjectsDir is where Claude Code keeps transcripts:
// $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects.
func ProjectsDir() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "projects"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".claude", "projects"), nil
}

// Slug is the name of the folder under ProjectsDir holding the sessions
// started in dir: every character other than a letter or digit becomes
// "-" ("/home/a/my.app" is "-home-a-my-app").
func Slug(dir string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, dir)
}

// Latest is the most recently written transcript of the sessions started
// in dir.
func Latest(projects, dir string) (string, error) {
	folder := filepath.Join(projects, Slug(dir))
	entries, err := os.ReadDir(folder)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no Claude Code sessions for %s (looked in %s)", dir, folder)
	}
	if err != nil {
		return "", err
	}
	var best string
	var bestMod int64
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".jsonl" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if m := info.ModTime().UnixNano(); best == "" || m > bestMod {
			best, bestMod = filepath.Join(folder, e.Name()), m
		}
	}
	if best == "" {
		return "", fmt.Errorf("no Claude Code sessions for %s (no *.jsonl in %s)", dir, folder)
	}
	return best, nil
}
