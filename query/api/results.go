package api

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// enginePool holds monitor engines of one rule set: an engine serves one
// run at a time, and summaries are computed concurrently.
type enginePool struct {
	pool  sync.Pool
	rules map[string]bool // the ids of the rules the engines evaluate
}

func newEnginePool(set *ruleset.Set) (*enginePool, error) {
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		return nil, fmt.Errorf("query api: the monitor's rules: %w", errors.Join(errs...))
	}
	p := &enginePool{rules: map[string]bool{}}
	for _, r := range eng.Rules() {
		p.rules[r.ID] = true
	}
	p.pool.Put(eng)
	p.pool.New = func() any {
		e, _ := monitor.NewEngine(set) // compiled once above without an error
		return e
	}
	return p, nil
}

// covers reports whether the engines evaluate every rule of manifest.
func (p *enginePool) covers(manifest []schema.RuleManifestEntry) bool {
	for _, r := range manifest {
		if !p.rules[r.ID] {
			return false
		}
	}
	return true
}

// results monitors a run's events as `ponens check` does (a run without
// a closing event is ended where its events end) and returns each rule's
// outcome by finite-trace semantics, in the order of manifest, whose
// rules the engines must cover.
func (p *enginePool) results(runID string, events []schema.Event, manifest []schema.RuleManifestEntry) ([]string, error) {
	eng := p.pool.Get().(*monitor.Engine)
	defer p.pool.Put(eng)
	run := eng.NewRun(runID)
	for i := range events {
		if _, err := run.Add(&events[i]); err != nil {
			if errors.Is(err, monitor.ErrEnded) {
				break // events after the closing one: check refuses such a file, the store kept them
			}
			return nil, fmt.Errorf("run %s: event seq %d: %w", runID, events[i].Seq, err)
		}
	}
	if !run.Ended() {
		run.End()
	}
	byID := map[string]string{}
	for _, r := range run.Results() {
		byID[r.RuleID] = string(r.Outcome)
	}
	out := make([]string, len(manifest))
	for i, r := range manifest {
		out[i] = byID[r.ID]
	}
	return out, nil
}
