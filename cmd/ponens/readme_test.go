package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeExample is one command of a README code block and the output the
// README shows for it.
type readmeExample struct {
	line    int // of the command in the README
	command string
	want    []string
}

// readmeExamples returns the commands of the README's code blocks that
// start with "$ ponens", each with the lines shown after it up to the
// next "$ " line. A block right after a line "<!-- unchecked: why -->" is
// left out.
func readmeExamples(readme string) []readmeExample {
	var out []readmeExample
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "```") {
			end++
		}
		body := lines[i+1 : min(end, len(lines))]
		unchecked := i > 0 && strings.HasPrefix(lines[i-1], "<!-- unchecked:")
		if !unchecked && len(body) > 0 && strings.HasPrefix(strings.TrimSpace(body[0]), "$ ponens") {
			indent := strings.Repeat(" ", len(body[0])-len(strings.TrimLeft(body[0], " ")))
			for j, l := range body {
				l = strings.TrimRight(strings.TrimPrefix(l, indent), " ")
				if cmd, ok := strings.CutPrefix(l, "$ "); ok {
					out = append(out, readmeExample{line: i + 2 + j, command: cmd})
				} else if len(out) > 0 {
					out[len(out)-1].want = append(out[len(out)-1].want, l)
				}
			}
		}
		i = end
	}
	return out
}

// matchLines reports whether got matches want, where a want line that is
// just "…" stands for any number of lines and a "…" within a line for any
// text.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "…" {
		for k := 0; k <= len(got); k++ {
			if matchLines(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	parts := strings.Split(want[0], "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	if !regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got[0]) {
		return false
	}
	return matchLines(want[1:], got[1:])
}

// TestReadmeExamples runs every command the README shows with its output
// (code blocks starting with "$ ponens"), with the built binary on the
// PATH, in a copy of the repository's examples (check writes beside the
// traces), and compares what it prints, stdout and stderr together, with
// what the README shows.
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := readmeExamples(string(readme))
	if len(examples) < 10 {
		t.Fatalf("only %d README examples found", len(examples))
	}
	root := t.TempDir()
	for _, dir := range []string{"examples", "testdata"} {
		if err := os.CopyFS(filepath.Join(root, dir), os.DirFS(filepath.Join("../..", dir))); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Dir(ponensBinary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, ex := range examples {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", ex.command)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+path)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run() // the exit code is the command's contract, tested elsewhere
		cancel()
		got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		for i := range got {
			got[i] = strings.TrimRight(got[i], " ")
		}
		if !matchLines(ex.want, got) {
			t.Errorf("README.md:%d: $ %s\ngot:\n%s\nthe README shows:\n%s", ex.line, ex.command, strings.Join(got, "\n"), strings.Join(ex.want, "\n"))
		}
	}
}

// TestMatchLines: the README's "…" stands for lines or for text, nothing
// else.
func TestMatchLines(t *testing.T) {
	for _, tc := range []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"a", "…", "d"}, []string{"a", "b", "c", "d"}, true},
		{[]string{"a", "…", "d"}, []string{"a", "d"}, true},
		{[]string{"a", "…"}, []string{"a", "b"}, true},
		{[]string{"a", "d"}, []string{"a", "b", "d"}, false},
		{[]string{"x … z"}, []string{"x y z"}, true},
		{[]string{"x … z"}, []string{"x y"}, false},
		{[]string{"a"}, []string{"a", "b"}, false},
		{[]string{"(a)"}, []string{"xa"}, false},
	} {
		if got := matchLines(tc.want, tc.got); got != tc.ok {
			t.Errorf("matchLines(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
}

// TestDocsStandAlone: the README and the user docs cite nothing a reader
// of this repository does not have: no seed documents, design notes,
// sections of them, or the history of the project.
func TestDocsStandAlone(t *testing.T) {
	cites := regexp.MustCompile(`seed 00\d|§|DESIGN\.md|\bSEMANTICS\.md|session[- ]\d`)
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	files := []string{"README.md", "examples/rules/gallery.yaml", "examples/rules/POLICY.md", "examples/checks/standard.yaml"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := cites.FindString(line); m != "" {
				t.Errorf("%s:%d: cites %q", f, i+1, m)
			}
		}
	}
}
