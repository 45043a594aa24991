package benchreport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// ruleClass is a set of rules of one kind, from a file of the repository.
type ruleClass struct {
	name, path string
}

var ruleClasses = []ruleClass{
	{"pure temporal, 20 rules", "monitor/testdata/pure20.yaml"},
	{"scoped (P_target, H_target, P_chain, H_chain)", "monitor/testdata/scoped.yaml"},
	{"structural (quantifiers, counts, data flow)", "monitor/testdata/structural.yaml"},
	{"the example rules", "examples/rules"},
}

// engine loads the rules at path into a monitor engine.
func engine(path string) (*monitor.Engine, error) {
	set, probs := ruleset.Load(path)
	if probs != nil {
		return nil, probs
	}
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", path, errs[0])
	}
	return eng, nil
}

// randomRuns are the evaluator's input: random valid runs with lineage,
// residuals and resolutions, the same for every class.
func randomRuns(runs, actions int) [][]schema.Event {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]schema.Event, runs)
	for i := range out {
		out[i] = gen.Run(r, fmt.Sprintf("bench-%d", i), gen.RunConfig{MaxActions: actions})
	}
	return out
}

// evaluatorRows measures each rule class on one core: events through a
// monitor per second, repeated for at least a few seconds.
func evaluatorRows(ctx context.Context, o Options) []Row {
	runs, actions, least := 100, 400, 3*time.Second
	if o.Quick {
		runs, actions, least = 10, 50, 200*time.Millisecond
	}
	input := randomRuns(runs, actions)
	var rows []Row
	for _, c := range ruleClasses {
		row := Row{Section: "evaluator, one core", What: c.name}
		path := filepath.Join(o.Repo, c.path)
		if _, err := os.Stat(path); err != nil {
			row.Missing = fmt.Sprintf("%s is not here: run from a clone of the repository (--repo)", c.path)
			rows = append(rows, row)
			continue
		}
		o.say("evaluator: %s", c.name)
		eng, err := engine(path)
		if err != nil {
			row.Missing = err.Error()
			rows = append(rows, row)
			continue
		}
		perSec, err := evaluate(ctx, eng, input, least)
		if err != nil {
			row.Missing = err.Error()
		} else {
			row.Figure = fmt.Sprintf("%s events/s (%.2f µs/event)", thousands(perSec), 1e6/perSec)
		}
		rows = append(rows, row)
	}
	return rows
}

// evaluate feeds the runs through fresh monitors until least has passed,
// and returns events per second.
func evaluate(ctx context.Context, eng *monitor.Engine, runs [][]schema.Event, least time.Duration) (float64, error) {
	runtime.GC()
	start := time.Now()
	events := 0
	for time.Since(start) < least && ctx.Err() == nil {
		for _, evs := range runs {
			if len(evs) == 0 {
				continue
			}
			run := eng.NewRun(evs[0].RunID)
			for i := range evs {
				if _, err := run.Add(&evs[i]); err != nil {
					return 0, fmt.Errorf("run %s seq %d: %w", evs[i].RunID, evs[i].Seq, err)
				}
			}
			events += len(evs)
		}
	}
	return float64(events) / time.Since(start).Seconds(), ctx.Err()
}

// memoryRows measures the heap an open run holds under the example rules
// after its start and two actions.
func memoryRows(ctx context.Context, o Options) []Row {
	row := Row{Section: "memory", What: "heap per open run (the example rules, after its first three events)"}
	path := filepath.Join(o.Repo, "examples/rules")
	eng, err := engine(path)
	if err != nil {
		row.Missing = err.Error()
		return []Row{row}
	}
	n := 20_000
	if o.Quick {
		n = 1_000
	}
	o.say("memory: %d open runs", n)
	input := randomRuns(n, 3)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	open := make([]*monitor.Run, 0, n)
	for _, evs := range input {
		if len(evs) == 0 {
			continue
		}
		run := eng.NewRun(evs[0].RunID)
		for i := range evs[:min(3, len(evs))] {
			if evs[i].Type == schema.TypeRunFinish || evs[i].Type == schema.TypeRunError {
				break // the run stays open
			}
			if _, err := run.Add(&evs[i]); err != nil {
				row.Missing = err.Error()
				return []Row{row}
			}
		}
		open = append(open, run)
	}
	input = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(len(open))
	runtime.KeepAlive(open)
	row.Figure = fmt.Sprintf("%s bytes (%s open runs)", thousands(float64(per)), thousands(float64(n)))
	return []Row{row}
}

// thousands formats x rounded, with thousands separated by commas.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
