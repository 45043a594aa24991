package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/schema"
)

// streamTestTraces are the event streams and reference traces of the
// repository's tests and examples that a check reads.
func streamTestTraces(t *testing.T) []string {
	t.Helper()
	var out []string
	references := []string{"../../examples/traces", "../../testdata/corpus/traces"}
	for _, root := range append([]string{"../../schema/testdata", "../../ingest", "testdata/check/traces"}, references...) {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || isOutput(p) {
				return err
			}
			if strings.HasSuffix(p, ".jsonl") || (slices.Contains(references, root) && strings.HasSuffix(p, ".json")) {
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
// one at a time, reading event streams and reference traces as they go
// (streamChecks, on one goroutine and on four) and whole (checkWhole),
// with one rule and with the 20 pure rules, and compares summary.json and
// every verdict stream byte for byte.
func TestCheckStreamingMatchesWhole(t *testing.T) {
	defer func(min int64) { streamReferenceMin = min }(streamReferenceMin)
	streamReferenceMin = 0 // every reference trace read as it goes
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
				var implied [3][]string
				for i := range outs {
					outs[i] = t.TempDir()
					var err error
					var res *checkResult
					if i != 1 {
						var checked []checkedRun
						var done func()
						checked, done, err = streamChecks(trs, config.TraceConfig{}, engs[:1+3*(i/2)], io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
						if err != nil {
							t.Fatal(err)
						}
						for _, c := range checked {
							if c.Events != nil && readsClean(t, c.File) {
								t.Errorf("%s was read whole", c.File)
							}
						}
						res, err = writeCheck(eng.Rules(), checked, outs[i], filepath.Join(outs[i], "v"))
						done()
					} else {
						res, err = checkWhole(eng, trs, &config.Config{}, outs[i], filepath.Join(outs[i], "v"), "", io.Discard)
					}
					if err != nil || res == nil {
						t.Fatal(err)
					}
					implied[i] = res.implied
				}
				same(t, outs[0], outs[1])
				same(t, outs[0], outs[2])
				if !slices.Equal(implied[0], implied[1]) || !slices.Equal(implied[0], implied[2]) {
					t.Errorf("runs ended as completed without an outcome: streaming %v, whole %v, on 4 goroutines %v", implied[0], implied[1], implied[2])
				}
			})
			if !ok {
				return
			}
		}
	}
}

// readsClean reports whether the trace file p is an event stream or a
// reference trace without problems or warnings, which a check reads as it
// goes (a trace with warnings is read whole, so that they are reported).
func readsClean(t *testing.T, p string) bool {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !schema.IsReference(data) {
		return true
	}
	_, ok := schema.DecodeReferenceFast(data)
	return ok
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

// TestStreamReferenceGivesUpPartWay: a reference trace whose reading as
// it goes gives up at its fourth action, after events were monitored, is
// checked as reading it whole checks it (nothing of the first attempt
// kept): with a warning (a label given as a number), the same notes,
// summary.json and verdict files; with a problem, the
// same error (an action without a type).
func TestStreamReferenceGivesUpPartWay(t *testing.T) {
	defer func(min int64) { streamReferenceMin = min }(streamReferenceMin)
	rf := ruleFlags{rules: []string{"testdata/check/rules.yaml"}}
	eng, err := loadEngine(&rf, config.RulesConfig{}, false)
	if err != nil {
		t.Fatal(err)
	}
	action := func(id int, typ, more string) string {
		return fmt.Sprintf(`{"id": %d, "type": %q, "status": "completed"%s}`, id, typ, more)
	}
	for name, fourth := range map[string]string{
		"warning": action(4, "GitCommit", `, "label": 42`),
		"problem": `{"id": 4, "status": "completed"}`, // no type
	} {
		t.Run(name, func(t *testing.T) {
			trace := `{"trace_id": "part-way", "actions": [` + action(1, "EditFile", "") + ", " + action(2, "RunTests", "") + ", " +
				action(3, "EditFile", "") + ", " + fourth + ", " + action(5, "GitCommit", "") + `], "outcome": {"type": "ProcessCompleted"}}`
			p := filepath.Join(t.TempDir(), "part-way.json")
			if err := os.WriteFile(p, []byte(trace), 0o644); err != nil {
				t.Fatal(err)
			}
			handed := 0
			if schema.EachReferenceEvent([]byte(trace), func(*schema.Event) { handed++ }) || handed != 4 {
				t.Fatalf("read as it goes: %d events handed before giving up, want 4 (run.start and three actions)", handed)
			}
			var outs, notes, errs [2]string
			for i, min := range []int64{0, math.MaxInt64} {
				streamReferenceMin = min
				outs[i] = t.TempDir()
				var buf bytes.Buffer
				checked, done, err := streamChecks([]string{p}, config.TraceConfig{}, []*monitor.Engine{eng}, &buf, newProgress(io.Discard, 1, progressMin, "", ""))
				notes[i] = buf.String()
				if err != nil {
					errs[i] = err.Error()
					continue
				}
				if len(checked) != 1 {
					t.Fatalf("%d runs checked, want 1", len(checked))
				}
				if _, err := writeCheck(eng.Rules(), checked, outs[i], filepath.Join(outs[i], "v")); err != nil {
					t.Fatal(err)
				}
				done()
			}
			if notes[0] != notes[1] || errs[0] != errs[1] {
				t.Fatalf("as it goes: notes %q, error %q; whole: notes %q, error %q", notes[0], errs[0], notes[1], errs[1])
			}
			if name == "warning" {
				if !strings.Contains(notes[0], "label") {
					t.Fatalf("no warning about the label: %q", notes[0])
				}
				same(t, outs[0], outs[1])
			} else if errs[0] == "" {
				t.Fatal("a repeated key accepted")
			}
		})
	}
}
