package main

import (
	"strings"
	"testing"

	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/schema"
)

// TestDemoDecideHint: the demo's report never suggests asking about a run
// that has ended (the service answers "no step can follow", exit 2).
func TestDemoDecideHint(t *testing.T) {
	runs := fleet.Generate(fleet.Config{Agents: 2, RunsPerAgent: 2, Steps: 6, Seed: 3, RunPrefix: "demo-3-x-"})
	hint := demoDecideHint(runs, "demo-3-x-", "nats://h:1")
	if want := "ponens decide --run demo-3-x-next --new-run --url nats://h:1 INTENT.json"; !strings.Contains(hint, want) {
		t.Errorf("every run ended: hint %q, want %q", hint, want)
	}
	open := runs[0]
	open.Events = open.Events[:len(open.Events)-1]
	if open.Events[len(open.Events)-1].Type == schema.TypeRunFinish {
		t.Fatal("the fixture still ends")
	}
	hint = demoDecideHint([]fleet.Run{open, runs[1]}, "demo-3-x-", "nats://h:1")
	if want := "ponens decide --run " + open.ID + " --url nats://h:1 INTENT.json"; !strings.Contains(hint, want) {
		t.Errorf("run %s open: hint %q, want %q", open.ID, hint, want)
	}
}
