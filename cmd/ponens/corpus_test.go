package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
)

// corpus is the corpus of realistic reference traces (governed and
// violating pairs, each embedding the policies it was written against,
// some in the loose forms real files have) and gallery-shaped policy files
// carrying every catalogue metadata field.
const corpus = "../../testdata/corpus"

// TestCorpusGolden checks every corpus trace against its own embedded
// policies with the real binary, from a copy of the corpus: the short
// summary, the notes and warnings, and the exit code of `check`, and the
// rows of `eval`, must equal testdata/corpus/golden/<trace>.txt (-update
// rewrites them); and for every policy, check's matrix.results cell must
// be eval's result: a reference trace is a finished record for both.
func TestCorpusGolden(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(corpus)); err != nil {
		t.Fatal(err)
	}
	traces, err := filepath.Glob(filepath.Join(corpus, "traces", "*.json"))
	if err != nil || len(traces) < 4 {
		t.Fatalf("corpus traces: %v %v", traces, err)
	}
	type command struct {
		args  []string
		agree bool // check its results against eval's
	}
	cases := map[string][]command{
		// The gallery policies over the whole corpus; their metadata in
		// --json; no typo warning, only the one field no catalogue uses.
		"gallery": {
			{args: []string{"policy", "check", "--json", "policies"}},
			{args: []string{"policy", "check", "--strict", "--traces", "traces", "policies"}},
			{args: []string{"check", "--out", "OUT", "--rules", "policies", "traces"}},
		},
		// Every trace against its own policies in one summary: a policy
		// another trace embeds is not applicable to a trace.
		"embedded": {{args: []string{"check", "--out", "OUT", "traces"}}},
		// A trace's policies given as rules judge another trace.
		"as-rules": {{args: []string{"check", "--out", "OUT", "--rules", "traces/cart_governed.json", "traces/cart_violating.json"}, agree: false}},
	}
	for _, path := range traces {
		tr := "traces/" + filepath.Base(path)
		cases[strings.TrimSuffix(filepath.Base(path), ".json")] = []command{
			{args: []string{"check", "--out", "OUT", tr}, agree: true},
			{args: []string{"eval", tr}},
		}
	}
	for name, cmds := range cases {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			var b strings.Builder
			for _, c := range cmds {
				args := slices.Clone(c.args)
				for i, a := range args {
					if a == "OUT" {
						args[i] = out
					}
				}
				res := runBinary(t, root, nil, args...)
				fmt.Fprintf(&b, "$ ponens %s\n%s%sexit %d\n", strings.Join(c.args, " "), res.stdout, res.stderr, res.code)
				if c.agree {
					agree(t, root, out, args[len(args)-1])
				}
			}
			got := strings.ReplaceAll(b.String(), out, "OUT")
			golden := filepath.Join(corpus, "golden", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update after checking the output)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// agree checks that summary.json's matrix.results equal the results of
// `eval --json` on the same trace, cell by cell.
func agree(t *testing.T, root, out, tr string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s schema.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	ev := runBinary(t, root, nil, "eval", "--json", tr)
	evalResult := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(ev.stdout), "\n") {
		var row struct{ Rule, Result string }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("eval --json line %q: %v", line, err)
		}
		evalResult[row.Rule] = row.Result
	}
	if len(evalResult) != len(s.Matrix.Rules) || len(s.Matrix.Rules) == 0 {
		t.Fatalf("eval judged %d rules, check %d", len(evalResult), len(s.Matrix.Rules))
	}
	for i, rule := range s.Matrix.Rules {
		if got := s.Matrix.Results[i][0]; got != evalResult[rule] {
			t.Errorf("%s: check says %s (%s), eval says %s", rule, got, s.Matrix.Cells[i][0], evalResult[rule])
		}
	}
}
