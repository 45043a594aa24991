package fleet

import (
	"testing"
	"time"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// TestFleet: runs are valid, reproducible, interleaved without reordering a
// run, and the violating ones (and only those) break the example rules.
func TestFleet(t *testing.T) {
	cfg := Config{Agents: 5, RunsPerAgent: 8, Steps: 12, Violations: 0.5, Seed: 7}
	runs := Generate(cfg)
	again := Generate(cfg)
	if len(runs) != 40 {
		t.Fatalf("%d runs", len(runs))
	}
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	eng, _ := monitor.NewEngine(set)
	bad := 0
	for i, r := range runs {
		if len(r.Events) != len(again[i].Events) {
			t.Fatalf("run %s differs between two generations", r.ID)
		}
		run := eng.NewRun(r.ID)
		violated := false
		for j := range r.Events {
			if err := r.Events[j].Validate(); err != nil {
				t.Fatalf("%s seq %d: %v", r.ID, r.Events[j].Seq, err)
			}
			vs, err := run.Add(&r.Events[j])
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				violated = violated || v.Status == schema.StatusViolated
			}
		}
		if !run.Ended() {
			for _, v := range run.End() {
				violated = violated || v.Status == schema.StatusViolated || v.Status == schema.StatusUnresolved
			}
		}
		if r.Violating {
			bad++
		}
		if violated != r.Violating {
			t.Errorf("run %s: violating %v, but the monitor says violated/unresolved %v", r.ID, r.Violating, violated)
		}
	}
	if bad == 0 || bad == len(runs) {
		t.Errorf("%d of %d runs violate: want a mix", bad, len(runs))
	}
	order := Interleave(runs, 1)
	next := map[string]uint64{}
	for _, ev := range order {
		if ev.Seq != next[ev.RunID]+1 {
			t.Fatalf("%s: seq %d after %d", ev.RunID, ev.Seq, next[ev.RunID])
		}
		next[ev.RunID] = ev.Seq
	}
}

// End moves the whole fleet in time, keeping every gap between events.
func TestFleetEnd(t *testing.T) {
	c := Config{Agents: 3, RunsPerAgent: 2, Steps: 6, Violations: 0.5, Seed: 9}
	base := Generate(c)
	c.End = time.Date(2027, 3, 4, 5, 6, 7, 0, time.UTC)
	moved := Generate(c)
	var latest time.Time
	d := moved[0].Events[0].TS.Sub(base[0].Events[0].TS)
	for i, r := range moved {
		for j, ev := range r.Events {
			if got := ev.TS.Sub(base[i].Events[j].TS); got != d {
				t.Fatalf("run %s event %d moved by %v, the first by %v", r.ID, j, got, d)
			}
			if ev.TS.After(latest) {
				latest = ev.TS
			}
		}
	}
	if !latest.Equal(c.End) {
		t.Errorf("latest event at %v, want End %v", latest, c.End)
	}
}
