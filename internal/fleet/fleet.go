// Package fleet generates a synthetic fleet of coding agents: runs of
// realistic steps (read, search, edit, test, commit, tool calls), some
// compliant and some breaking the usual rules, reproducibly from a seed.
// `ponens demo` publishes them to a running server; `ponens bench` loads it
// with them.
package fleet

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ponens/ponens/schema"
)

// Config shapes a fleet.
type Config struct {
	Agents       int     // distinct agents
	RunsPerAgent int     // runs each agent makes
	Steps        int     // actions per run (about)
	Violations   float64 // share of runs that break a rule, 0..1
	Seed         uint64
	RunPrefix    string // starts every run id
	// End, when set, is the time of the fleet's latest event: every run is
	// moved in time by the same amount, so a demo's runs happened in the
	// last minutes. Zero leaves the runs starting on 2026-12-01 at 09:00
	// UTC, so that the same Config always gives the same events.
	End time.Time
}

// Validate names the first field out of range, as the flag that sets it.
func (c Config) Validate() error {
	switch {
	case c.Agents < 1:
		return fmt.Errorf("--agents: want at least 1 agent, got %d", c.Agents)
	case c.RunsPerAgent < 1:
		return fmt.Errorf("--runs: want at least 1 run per agent, got %d", c.RunsPerAgent)
	case c.Steps < 1:
		return fmt.Errorf("--steps: want at least 1 action per run, got %d", c.Steps)
	case !(c.Violations >= 0 && c.Violations <= 1):
		return fmt.Errorf("--violations: want a share from 0 to 1, got %g", c.Violations)
	}
	return nil
}

// Run is one generated run: its events in seq order.
type Run struct {
	ID        string
	Agent     string
	Violating bool
	Events    []schema.Event
}

var files = []string{"src/api.py", "src/db.py", "src/auth.py", "payments/refund.py", "payments/charge.py", "docs/README.md"}

// Generate makes the fleet's runs.
func Generate(c Config) []Run {
	r := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	var runs []Run
	for a := range c.Agents {
		agent := fmt.Sprintf("agent-%03d", a)
		for k := range c.RunsPerAgent {
			id := fmt.Sprintf("%s%s-run-%04d", c.RunPrefix, agent, k)
			bad := r.Float64() < c.Violations
			runs = append(runs, Run{ID: id, Agent: agent, Violating: bad, Events: run(r, id, agent, max(c.Steps, 4), bad)})
		}
	}
	if !c.End.IsZero() {
		shift(runs, c.End)
	}
	return runs
}

// shift moves every event of runs by the same duration, so that the latest
// is at end.
func shift(runs []Run, end time.Time) {
	var latest time.Time
	for _, r := range runs {
		for _, ev := range r.Events {
			if ev.TS.After(latest) {
				latest = ev.TS
			}
		}
	}
	d := end.Sub(latest)
	for _, r := range runs {
		for i := range r.Events {
			r.Events[i].TS = r.Events[i].TS.Add(d)
		}
	}
}

func run(r *rand.Rand, id, agent string, steps int, bad bool) []schema.Event {
	b := &builder{runID: id, ts: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	b.add(schema.Event{Type: schema.TypeRunStart, Start: &schema.RunStart{Agent: agent,
		Trigger: json.RawMessage(`{"type":"UserRequest"}`), HighStakesPaths: []string{"payments/"}}})
	mistake := -1
	if bad {
		mistake = r.IntN(4)
	}
	for b.actions < steps {
		f := files[r.IntN(len(files))]
		if mistake != 0 || r.IntN(2) == 0 {
			b.action(schema.Action{Type: "ReadFile", Category: "activity", Status: "completed", Evidence: fileRef(f)})
		}
		edit := schema.Action{Type: "EditFile", Category: "activity", Status: "completed", Rationale: "fix", Evidence: fileRef(f)}
		if len(f) > 9 && f[:9] == "payments/" { // high stakes: back the edit with a proof in its lineage
			vr := fmt.Sprintf("vr-%d", b.actions+1)
			producer := int64(b.actions + 1)
			b.action(schema.Action{Type: "Verify", Category: "reasoning", Status: "completed", Outputs: []string{vr},
				Artifacts: []schema.Artifact{{ID: vr, Type: "VerificationResult", ProducerActionID: &producer,
					Payload: json.RawMessage(`{"status":"proved"}`)}}})
			edit.Inputs = []string{vr}
		}
		b.action(edit)
		if mistake != 1 {
			st := "completed"
			if r.IntN(6) == 0 {
				st = "failed"
				b.action(schema.Action{Type: "RunTests", Category: "activity", Status: st})
				st = "completed"
			}
			b.action(schema.Action{Type: "RunTests", Category: "activity", Status: st, ResultSummary: "all passed"})
		}
		if mistake == 2 && r.IntN(2) == 0 {
			b.action(schema.Action{Type: "ToolCall", Category: "activity", Capability: "file.write", ToolName: "write_file",
				Payload: json.RawMessage(`{"path":"config/.env"}`), WorkerID: agent})
			mistake = -1
		}
		b.action(schema.Action{Type: "GitCommit", Category: "gateway", Status: "completed"})
	}
	if mistake == 3 {
		return b.events // the agent vanished: no closing event
	}
	b.add(schema.Event{Type: schema.TypeRunFinish, End: &schema.RunEnd{Outcome: json.RawMessage(`{"type":"ProcessCompleted"}`)}})
	return b.events
}

func fileRef(f string) []schema.Evidence { return []schema.Evidence{{Type: "FileRef", Ref: f}} }

type builder struct {
	runID   string
	ts      time.Time
	events  []schema.Event
	actions int
}

func (b *builder) add(ev schema.Event) {
	b.ts = b.ts.Add(time.Second)
	ev.V, ev.RunID, ev.Seq, ev.TS = schema.EnvelopeVersion, b.runID, uint64(len(b.events)+1), b.ts
	b.events = append(b.events, ev)
}

func (b *builder) action(a schema.Action) {
	b.actions++
	a.ID = int64(b.actions)
	b.add(schema.Event{Type: schema.TypeAction, Action: &a})
}

// Interleave orders the events of many runs as concurrent agents would send
// them: each run in seq order, runs mixed at random.
func Interleave(runs []Run, seed uint64) []*schema.Event {
	r := rand.New(rand.NewPCG(seed, 0x1eaf))
	cursor := make([]int, len(runs))
	live := make([]int, 0, len(runs))
	for i := range runs {
		if len(runs[i].Events) > 0 {
			live = append(live, i)
		}
	}
	var out []*schema.Event
	for len(live) > 0 {
		j := r.IntN(len(live))
		i := live[j]
		out = append(out, &runs[i].Events[cursor[i]])
		cursor[i]++
		if cursor[i] == len(runs[i].Events) {
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
		}
	}
	return out
}
