package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ponens/ponens/query/record/stored"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

// storeCheck writes the checked runs' events and verdict streams and the
// checked rules (as version 1 in rule_versions) into the embedded store at
// dir, in one commit, and then the record entries of the runs that ended,
// as the sink does; what a run's payloads held that the record could not
// read goes to notes.
func storeCheck(lib, dir string, runs []namedRun, streams [][]schema.VerdictEvent, rules []schema.RuleManifestEntry, notes io.Writer) error {
	e, err := chdb.Open(chdb.Options{Lib: lib, Path: dir})
	if err != nil {
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	defer e.Close()
	if _, err := chdb.Migrate(e); err != nil {
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	st := chdb.NewStore(e)
	a := st.Appender()
	var pos uint64
	var ended []string
	for i, nr := range runs {
		if err := sink.AppendRun(a, nr.Run.Events, streams[i], &pos); err != nil {
			return exitWith(exitBadInput, "%s: %v", nr.File, err)
		}
		if evs := nr.Run.Events; len(evs) > 0 && evs[len(evs)-1].Type.IsTerminal() {
			ended = append(ended, nr.Run.ID)
		}
	}
	if err := appendCheckedRules(a, rules, &pos); err != nil {
		return exitWith(exitBadInput, "--store %s: %v", dir, err)
	}
	if err := a.Commit(); err != nil {
		a.Rollback()
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	w := &stored.Writer{Store: chdb.Querier{E: e}, Insert: st, Problems: func(run string, problems []string) {
		fmt.Fprintf(notes, "ponens check: --store %s: run %s: record entries: %s\n", dir, run, strings.Join(problems, "; "))
	}}
	if err := w.Ended(context.Background(), ended); err != nil {
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	return nil
}

// appendCheckedRules appends the rules a check judged by as the sink
// stores the fleet's rule manifest: each its version 1 (the id its verdicts
// carry), put in force now, at the positions after *pos.
func appendCheckedRules(a sink.Appender, rules []schema.RuleManifestEntry, pos *uint64) error {
	now := time.Now().UTC()
	for _, r := range rules {
		*pos++
		h := sink.RuleHistory{ID: r.ID, Versions: []sink.RuleVersion{{Version: 1, Text: r.Text, Description: r.Description, Mode: string(r.Mode), Since: now}}}
		if err := sink.AppendRuleHistory(a, &h, schema.StreamMeta{Seq: *pos, Time: now}); err != nil {
			return fmt.Errorf("rule %s: %w", r.ID, err)
		}
	}
	return nil
}
