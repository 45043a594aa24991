package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/schema"
)

// streamTestTraces are the event streams and reference traces of the
// repository's tests and examples that a check reads.
func streamTestTraces(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, root := range []string{"../../examples/traces", "../../schema/testdata", "../../ingest", "testdata/check/traces"} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || isOutput(p) {
				return err
			}
			if strings.HasSuffix(p, ".jsonl") || (root == "../../examples/traces" && strings.HasSuffix(p, ".json")) {
				out = append(out, p)
			}
			return nil
		})
	}
	if len(out) < 10 {
		t.Fatalf("found only %d test traces: %v", len(out), out)
	}
	return out
}

// TestCheckStreamingMatchesWhole checks every test trace, all at once and
// one at a time, reading event streams as they go (streamChecks, on one
// goroutine and on four) and whole (checkWhole),
// with one rule and with the 20 pure rules, and compares summary.json and
// every verdict stream byte for byte.
func TestCheckStreamingMatchesWhole(t *testing.T) {
	for _, rules := range []string{"testdata/check/rules.yaml", "../../monitor/testdata/pure20.yaml"} {
		rf := ruleFlags{rules: []string{rules}}
		engs, err := loadEngines(&rf, config.RulesConfig{}, false, 4)
		if err != nil {
			t.Fatal(err)
		}
		eng := engs[0]
		all := streamTestTraces(t)
		sets := [][]string{all} // every trace in one check, then each alone
		for _, tr := range all {
			sets = append(sets, []string{tr})
		}
		for _, trs := range sets {
			name := trs[0]
			if len(trs) > 1 {
				name = "all"
			}
			ok := t.Run(filepath.Base(rules)+"/"+name, func(t *testing.T) {
				var outs [3]string // streaming, whole, streaming on 4 goroutines
				for i := range outs {
					outs[i] = t.TempDir()
					var err error
					var res *checkResult
					if i != 1 {
						checked, done, err := streamChecks(trs, config.TraceConfig{}, engs[:1+3*(i/2)], io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
						if err != nil {
							t.Fatal(err)
						}
						res, err = writeCheck(eng.Rules(), checked, outs[i], filepath.Join(outs[i], "v"))
						done()
					} else {
						res, err = checkWhole(eng, trs, &config.Config{}, outs[i], filepath.Join(outs[i], "v"), "", io.Discard)
					}
					if err != nil || res == nil {
						t.Fatal(err)
					}
				}
				same(t, outs[0], outs[1])
				same(t, outs[0], outs[2])
			})
			if !ok {
				return
			}
		}
	}
}

// TestScanStreams checks that the test event streams are read as they go
// (the comparison above compares something), and that a reference trace
// is left to the whole-file reader.
func TestScanStreams(t *testing.T) {
	for _, tr := range streamTestTraces(t) {
		n := 0
		streamed, err := tracefile.Scan(tr, tracefile.Limits{}, func(*schema.Event) { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.HasSuffix(tr, ".jsonl"); streamed != want || (streamed && n == 0) {
			t.Errorf("%s: streamed %v with %d events, want streamed %v", tr, streamed, n, want)
		}
	}
}

// same fails unless directories a and b hold the same files, byte for
// byte.
func same(t *testing.T, a, b string) {
	t.Helper()
	files := 0
	filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, _ := os.ReadFile(p)
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs:\nstreaming:\n%s\nwhole:\n%s", rel, x, y)
		}
		files++
		return nil
	})
	n := 0
	filepath.WalkDir(b, func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if files != n || files < 2 {
		t.Errorf("streaming wrote %d files, whole %d", files, n)
	}
}

// TestChunks records stretches of a spill, some following each other,
// some apart, and reads back the same stretches, merged where they touch.
func TestChunks(t *testing.T) {
	var c chunks
	writes := [][2]int64{{0, 10}, {10, 300}, {5000, 1}, {5001, 200000}, {1 << 40, 7}, {1<<40 + 8, 3}}
	for _, w := range writes {
		c.add(w[0], w[1])
	}
	want := [][2]int64{{0, 310}, {5000, 200001}, {1 << 40, 7}, {1<<40 + 8, 3}}
	var got [][2]int64
	c.each(func(off, n int64) { got = append(got, [2]int64{off, n}) })
	if !slices.Equal(got, want) {
		t.Errorf("stretches %v, want %v", got, want)
	}
}

// TestCheckParallelMatchesSequential checks a generated file of 300
// interleaved runs (several thousand lines: many decoding batches) with
// one engine, where one goroutine decodes and one monitors, and with
// four, where the lines are decoded on four goroutines and the runs are
// monitored on four, and compares summary.json and every verdict stream
// byte for byte.
func TestCheckParallelMatchesSequential(t *testing.T) {
	rf := ruleFlags{rules: []string{"../../monitor/testdata/pure20.yaml"}}
	engs, err := loadEngines(&rf, config.RulesConfig{}, false, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fleet.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteStream(f, 300, 12000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var outs [2]string
	for i, n := range []int{1, 4} {
		outs[i] = t.TempDir()
		checked, done, err := streamChecks([]string{p}, config.TraceConfig{}, engs[:n], io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		if len(checked) != 300 {
			t.Fatalf("%d engines: %d runs, want 300", n, len(checked))
		}
		_, err = writeCheck(engs[0].Rules(), checked, outs[i], filepath.Join(outs[i], "v"))
		done()
		if err != nil {
			t.Fatal(err)
		}
	}
	same(t, outs[0], outs[1])
}
