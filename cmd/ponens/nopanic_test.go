package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoCommandPanics runs every offline command that reads files over
// every file under examples/ and the corpus of testdata/corpus, each file in
// every role a command gives a file (policy, trace, intent, history). Any
// answer (0, 1 or 2, with a message) is fine; a panic is not.
func TestNoCommandPanics(t *testing.T) {
	root := t.TempDir()
	for _, d := range []struct{ from, to string }{{"../../examples", "examples"}, {"../../testdata/corpus", "corpus"}} {
		if err := os.CopyFS(filepath.Join(root, d.to), os.DirFS(d.from)); err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".go") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files found", len(files))
	}
	out := t.TempDir()
	for _, f := range files {
		for _, args := range [][]string{
			{"policy", "check", f},
			{"policy", "check", "--strict", "--traces", "examples/traces", f},
			{"policy", "validate", f},
			{"eval", "--rules", f, "examples/traces"},
			{"eval", "--rules", "examples/rules", f},
			{"eval", f},
			{"check", "--out", out, "--rules", f, "examples/traces/fleet.jsonl"},
			{"check", "--out", out, "--rules", "examples/rules", f},
			{"check", "--out", out, f},
			{"decide", "--rules", "examples/rules", f},
			{"decide", "--rules", "examples/rules", "--history", f, "examples/decide/intent.json"},
		} {
			res := runBinary(t, root, nil, args...)
			if res.code > exitBadInput || strings.Contains(res.stderr, "panic") || strings.Contains(res.stderr, "goroutine ") {
				t.Errorf("ponens %s: exit %d\n%s", strings.Join(args, " "), res.code, res.stderr)
			}
		}
	}
}
