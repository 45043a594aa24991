// Command storegen fills an embedded store with a synthetic fleet for
// measuring the query service at scale (docs/query-api.md): every run has
// a run.start, actions and a run.finish, and one verdict transition per
// event after its start, spread over the rules of a rules file and over
// the days before a given end. The rows are made by the engine itself
// (INSERT … SELECT over numbers()), through the same tables and views the
// sink writes, so a store of 10 million verdicts is made in under a minute.
// The rows measure queries, not semantics: a rule's later transition in a
// run does not follow from its earlier one.
//
// With -record, the run of a trace file is stored again -record-runs
// times besides (run ids record-0, record-1, …), through the sink's
// appender and the record-entry writer, so that the record queries have
// records to read.
//
//	go run ./internal/gen/storegen -store /tmp/scale -rules examples/rules -runs 1000000 -verdicts 10 \
//	    -record examples/record/payments.json -record-runs 1000
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/sink/chdb"
)

func main() {
	store := flag.String("store", "", "the store's data directory (created)")
	rules := flag.String("rules", "examples/rules", "the rules whose ids the verdicts carry")
	runs := flag.Int("runs", 1_000_000, "runs")
	perRun := flag.Int("verdicts", 10, "verdict transitions per run (each run has as many actions)")
	days := flag.Int("days", 7, "the runs start evenly over this many days before -end")
	end := flag.String("end", time.Now().UTC().Truncate(time.Hour).Format(time.RFC3339), "when the last run starts (RFC 3339)")
	violated := flag.Float64("violated", 0.05, "share of the transitions that are violations")
	recordFile := flag.String("record", "", "a trace file whose run is stored again -record-runs times, record entries included")
	recordRuns := flag.Int("record-runs", 1000, "copies of the -record run")
	flag.Parse()
	if err := run(*store, *rules, *runs, *perRun, *days, *end, *violated); err != nil {
		fmt.Fprintln(os.Stderr, "storegen:", err)
		os.Exit(1)
	}
	if *recordFile != "" {
		if err := storeRecords(*store, *recordFile, *recordRuns); err != nil {
			fmt.Fprintln(os.Stderr, "storegen:", err)
			os.Exit(1)
		}
	}
}

func run(store, rules string, runs, perRun, days int, end string, violated float64) error {
	if store == "" || runs < 1 || perRun < 1 || days < 1 {
		return fmt.Errorf("-store is required; -runs, -verdicts and -days must be at least 1")
	}
	last, err := time.Parse(time.RFC3339, end)
	if err != nil {
		return fmt.Errorf("-end: %w", err)
	}
	set, probs := ruleset.Load(rules)
	if probs != nil {
		return fmt.Errorf("-rules: %v", probs)
	}
	var ids []string
	for _, r := range set.Rules {
		if r.Formula != nil {
			ids = append(ids, "'"+r.ID+"'")
		}
	}
	e, err := chdb.Open(chdb.Options{Path: store})
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := chdb.Migrate(e); err != nil {
		return err
	}
	vars := strings.NewReplacer(
		"{runs}", fmt.Sprint(runs), "{per}", fmt.Sprint(perRun), "{span}", fmt.Sprint(days*86400),
		"{end}", last.Format("2006-01-02 15:04:05"), "{rules}", strings.Join(ids, ","),
		"{violated}", fmt.Sprint(int(violated*1000)))
	for _, step := range []struct{ what, sql string }{
		{"events", eventsSQL},
		{"verdicts", verdictsSQL},
	} {
		began := time.Now()
		if _, err := e.Query([]byte(vars.Replace(step.sql)), ""); err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
		fmt.Printf("%-9s %s\n", step.what, time.Since(began).Round(time.Millisecond))
	}
	out, err := e.Query([]byte("SELECT (SELECT count() FROM events), (SELECT count() FROM verdicts), (SELECT count() FROM runs FINAL)"), "TSV")
	if err != nil {
		return err
	}
	fmt.Printf("rows      events, verdicts, runs: %s", out)
	return nil
}

// Run n starts at {end} - {span}·(1 - n/{runs}) seconds; its event k (1 the
// start, {per}+2 the finish) is k seconds later. Stream sequences follow
// the runs in order, as a sink stores them.
const eventsSQL = `
INSERT INTO events (run_id, seq, ts, type, agent, action_type, target, capability, body, stream_seq)
SELECT run_id, seq, ts, type, agent, action_type, '', '', body, n * ({per} + 2) + seq
FROM (
    SELECT
        intDiv(number, {per} + 2) AS n,
        number % ({per} + 2) + 1 AS seq,
        concat('scale-', toString(n)) AS run_id,
        concat('agent-', toString(n % 50)) AS agent,
        toDateTime64('{end}', 3, 'UTC') - toIntervalSecond(intDiv({span} * ({runs} - n), {runs})) + toIntervalSecond(seq) AS ts,
        multiIf(seq = 1, 'run.start', seq = {per} + 2, 'run.finish', 'action') AS type,
        if(type = 'action', ['ReadFile', 'EditFile', 'RunTests', 'GitCommit'][seq % 4 + 1], '') AS action_type,
        concat('{"v":1,"runId":"', run_id, '","seq":', toString(seq), ',"ts":"', formatDateTime(ts, '%Y-%m-%dT%H:%i:%SZ'), '","type":"', type, '"',
            multiIf(type = 'run.start', concat(',"start":{"agent":"', agent, '","extra":{"project":"project-', toString(n % 7), '"}}}'),
                    type = 'run.finish', ',"end":{"outcome":{"type":"ProcessCompleted"}}}',
                    concat(',"action":{"id":', toString(seq - 1), ',"type":"', action_type, '","category":"activity","status":"completed"}}'))) AS body
    FROM numbers({runs} * ({per} + 2))
)`

// Verdict k of run n is on event k+2, of rule k mod the rules; a share of
// {violated}‰ of them are violations.
const verdictsSQL = `
INSERT INTO verdicts (run_id, rule_id, seq, ts, status, leaning, mode, rule_description, rule_version, cause_subformula, cause_event, stream_seq)
SELECT run_id, rule_id, seq, ts, status, '', 'observe', '', '', if(status = 'violated', 'P(RunTests)', ''), '', number + 1
FROM (
    SELECT
        number,
        intDiv(number, {per}) AS n,
        number % {per} AS k,
        concat('scale-', toString(n)) AS run_id,
        [{rules}][k % length([{rules}]) + 1] AS rule_id,
        k + 2 AS seq,
        toDateTime64('{end}', 3, 'UTC') - toIntervalSecond(intDiv({span} * ({runs} - n), {runs})) + toIntervalSecond(seq) AS ts,
        if(cityHash64(n, k) % 1000 < {violated}, 'violated', 'satisfied') AS status
    FROM numbers({runs} * {per})
)`
