package file

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestStreamPath(t *testing.T) {
	tests := []struct {
		src  Source
		want string
	}{
		{Source{File: "runs/a.jsonl"}, "runs/a.verdicts.jsonl"},
		{Source{File: "t.json"}, "t.verdicts.jsonl"},
		{Source{File: "dir.v2/trace"}, "dir.v2/trace.verdicts.jsonl"},
		{Source{File: "x/.trace"}, "x/.trace.verdicts.jsonl"},
		{Source{File: "a.b.jsonl"}, "a.b.verdicts.jsonl"},
		{Source{File: "runs/m.jsonl", RunID: "run-1.a_b", Multi: true}, "runs/m.run-1.a_b.verdicts.jsonl"},
		{Source{File: "m.jsonl", RunID: "org/run 7:é", Multi: true}, "m.org_run_7__.verdicts.jsonl"},
	}
	for _, tt := range tests {
		if got := filepath.ToSlash(StreamPath(tt.src)); got != tt.want {
			t.Errorf("StreamPath(%+v) = %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestLayoutIDs(t *testing.T) {
	tests := []struct {
		name string
		srcs []Source
		want []string
	}{
		{"file names when unique",
			[]Source{{File: "x/a.jsonl"}, {File: "y/b.jsonl"}},
			[]string{"a.jsonl", "b.jsonl"}},
		{"same name in two directories",
			[]Source{{File: "a/run.jsonl"}, {File: "b/run.jsonl"}, {File: "c/other.jsonl"}},
			[]string{"a/run.jsonl", "b/run.jsonl", "other.jsonl"}},
		{"only as long as needed, per trace",
			[]Source{{File: "x/a/run.jsonl"}, {File: "y/a/run.jsonl"}, {File: "b/run.jsonl"}},
			[]string{"x/a/run.jsonl", "y/a/run.jsonl", "b/run.jsonl"}},
		{"runs of one file",
			[]Source{{File: "d/m.jsonl", RunID: "r1", Multi: true}, {File: "d/m.jsonl", RunID: "r2", Multi: true}, {File: "n.jsonl", RunID: "r1"}},
			[]string{"m.jsonl#r1", "m.jsonl#r2", "n.jsonl"}},
		{"runs of same-named files",
			[]Source{{File: "a/m.jsonl", RunID: "r1", Multi: true}, {File: "a/m.jsonl", RunID: "r2", Multi: true}, {File: "b/m.jsonl", RunID: "r1", Multi: true}, {File: "b/m.jsonl", RunID: "r3", Multi: true}},
			[]string{"a/m.jsonl#r1", "a/m.jsonl#r2", "b/m.jsonl#r1", "b/m.jsonl#r3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			srcs := make([]Source, len(tt.srcs))
			for i, s := range tt.srcs {
				s.File = filepath.Join(dir, s.File)
				srcs[i] = s
			}
			places, err := Layout(srcs, "")
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range places {
				if p.ID != tt.want[i] {
					t.Errorf("id %d = %q, want %q", i, p.ID, tt.want[i])
				}
				if p.Verdicts != StreamPath(srcs[i]) {
					t.Errorf("verdicts %d = %q, want %q", i, p.Verdicts, StreamPath(srcs[i]))
				}
			}
		})
	}
}

func TestLayoutRelativePaths(t *testing.T) {
	// ids come from absolute paths: "run.jsonl" here and "../run.jsonl" are
	// named after their directories.
	t.Chdir(t.TempDir())
	wd, _ := filepath.Abs(".")
	places, err := Layout([]Source{{File: "run.jsonl"}, {File: "../run.jsonl"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Base(wd) + "/run.jsonl"; places[0].ID != want {
		t.Errorf("id = %q, want %q", places[0].ID, want)
	}
	if want := filepath.Base(filepath.Dir(wd)) + "/run.jsonl"; places[1].ID != want {
		t.Errorf("id = %q, want %q", places[1].ID, want)
	}
}

func TestLayoutErrors(t *testing.T) {
	tests := []struct {
		name string
		srcs []Source
		want string
	}{
		{"file twice", []Source{{File: "a/t.jsonl"}, {File: "a/../a/t.jsonl"}}, "trace a/../a/t.jsonl is listed twice (also as a/t.jsonl)"},
		{"run twice", []Source{{File: "m.jsonl", RunID: "r", Multi: true}, {File: "./m.jsonl", RunID: "r", Multi: true}}, "trace ./m.jsonl: run r is listed twice (also as m.jsonl)"},
		{"streams collide", []Source{{File: "t.json"}, {File: "t.jsonl"}}, "trace t.jsonl: its verdict stream t.verdicts.jsonl would overwrite the verdict stream of t.json"},
		{"stream over a trace", []Source{{File: "t.verdicts.jsonl"}, {File: "t.jsonl"}}, "trace t.jsonl: its verdict stream t.verdicts.jsonl would overwrite the trace file t.verdicts.jsonl"},
		{"run ids that sanitize alike", []Source{{File: "m.jsonl", RunID: "a/b", Multi: true}, {File: "m.jsonl", RunID: "a:b", Multi: true}}, "trace m.jsonl#a:b: its verdict stream m.a_b.verdicts.jsonl would overwrite the verdict stream of m.jsonl#a/b"},
		{"ids that cannot differ", []Source{{File: "x#r"}, {File: "x", RunID: "r", Multi: true}, {File: "x", RunID: "s", Multi: true}}, "traces x#r and x cannot be named apart: both are \"x#r\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			_, err := Layout(tt.srcs, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Layout error = %v, want %q", err, tt.want)
			}
		})
	}
}
