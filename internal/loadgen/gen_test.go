package loadgen

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// generate makes a whole load of n actions: starts, actions, finishes.
func generate(c GenConfig, n int) []*schema.Event {
	g := NewGenerator(c)
	var out []*schema.Event
	for i := range c.Runs {
		out = append(out, g.Start(i))
	}
	for range n {
		_, ev := g.Next()
		out = append(out, ev)
	}
	for i := range c.Runs {
		out = append(out, g.Finish(i))
	}
	return out
}

// TestGeneratorReproducible: the same seed gives the same events, another
// seed other ones.
func TestGeneratorReproducible(t *testing.T) {
	c := GenConfig{Runs: 20, Seed: 1, Violations: 0.05, RunPrefix: "r"}
	enc := func(evs []*schema.Event) string {
		b, err := json.Marshal(evs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := enc(generate(c, 2000)), enc(generate(c, 2000))
	if a != b {
		t.Fatal("two loads of the same seed differ")
	}
	c.Seed = 2
	if enc(generate(c, 2000)) == a {
		t.Fatal("two seeds give the same load")
	}
}

// TestGeneratorRules: every event is valid, each run's events come in seq
// order, the work cycle breaks no rule of examples/rules, and every mistake
// breaks one rule not broken yet in its run.
func TestGeneratorRules(t *testing.T) {
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		name       string
		violations float64
	}{{"compliant", 0}, {"some mistakes", 0.01}, {"only mistakes", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c := GenConfig{Runs: 30, Seed: 3, Violations: tc.violations, RunPrefix: "bench-r"}
			g := NewGenerator(c)
			runs := make([]*monitor.Run, c.Runs)
			seq := make([]uint64, c.Runs)
			violated := 0
			feed := func(i int, ev *schema.Event) {
				t.Helper()
				if err := ev.Validate(); err != nil {
					t.Fatalf("%s seq %d: %v", ev.RunID, ev.Seq, err)
				}
				if ev.RunID != g.RunID(i) || g.RunIndex(ev.RunID) != i || ev.Seq != seq[i]+1 {
					t.Fatalf("run %d: event %s seq %d after seq %d", i, ev.RunID, ev.Seq, seq[i])
				}
				seq[i] = ev.Seq
				vs, err := runs[i].Add(ev)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vs {
					if v.Status == schema.StatusViolated {
						violated++
					}
				}
			}
			for i := range c.Runs {
				runs[i] = eng.NewRun(g.RunID(i))
				feed(i, g.Start(i))
			}
			mistakes := 0
			for range 3000 {
				before := violated
				mistakesBefore := g.Mistakes()
				i, ev := g.Next()
				feed(i, ev)
				if g.Mistakes() > mistakesBefore {
					mistakes++
					if violated == before {
						t.Errorf("the mistake %s seq %d (%s) broke no rule", ev.RunID, ev.Seq, ev.Action.Type)
					}
				} else if violated != before {
					t.Errorf("the step %s seq %d (%s) broke a rule", ev.RunID, ev.Seq, ev.Action.Type)
				}
			}
			for i := range c.Runs {
				feed(i, g.Finish(i))
			}
			switch {
			case tc.violations == 0 && mistakes != 0,
				tc.violations == 1 && mistakes != c.Runs*NumMistakes,
				tc.violations > 0 && tc.violations < 1 && (mistakes == 0 || mistakes == c.Runs*NumMistakes):
				t.Errorf("%d mistakes in %d runs at violations %g", mistakes, c.Runs, tc.violations)
			}
		})
	}
}

func TestRunIndex(t *testing.T) {
	g := NewGenerator(GenConfig{Runs: 100, RunPrefix: "bench-r"})
	for _, tc := range []struct {
		id   string
		want int
	}{
		{"bench-r0", 0}, {"bench-r99", 99}, {"bench-r100", -1}, {"bench-r", -1}, {"bench-r007", -1},
		{"bench-r-1", -1}, {"other-r1", -1}, {"bench-r1x", -1},
	} {
		if got := g.RunIndex(tc.id); got != tc.want {
			t.Errorf("RunIndex(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		n             int
		p50, p99, max float64
	}{{0, 0, 0, 0}, {1, 1, 1, 1}, {100, 50, 99, 100}, {1000, 500, 990, 1000}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			samples := durations(tc.n)
			got := Summarize(samples)
			if got.P50 != tc.p50 || got.P99 != tc.p99 || got.Max != tc.max || got.Samples != tc.n {
				t.Errorf("Summarize(1..%d ms) = %+v, want p50 %g p99 %g max %g", tc.n, got, tc.p50, tc.p99, tc.max)
			}
		})
	}
}

// durations returns 1..n milliseconds, largest first.
func durations(n int) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = time.Duration(n-i) * time.Millisecond
	}
	return d
}
