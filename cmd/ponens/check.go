package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink/file"
)

func init() { subcommands = append(subcommands, newCheckCommand) }

func newCheckCommand() *cobra.Command {
	var rf ruleFlags
	var outDir, verdictsDir, failOn string
	var asJSON bool
	var storeDir string
	cmd := &cobra.Command{
		Use:   "check [--rules PATH]... [--formula FORMULA [--id ID]]... [--out DIR] [--verdicts-dir DIR] [--enforce] [--fail-on violated|unresolved] [--json] TRACE...",
		Short: "Monitor trace files and write their verdict streams and summary.json",
		Long: `Run every run of the trace files through the streaming monitor, as if its
events arrived live, and write the verdict artifacts: each run's verdict
stream beside its trace file (<trace>.verdicts.jsonl, or
<trace>.<runId>.verdicts.jsonl for a file of several runs) and summary.json,
the rule × trace matrix of terminal statuses, into --out. --verdicts-dir
puts the verdict streams under DIR instead, at each trace id's path. The
files get mode 0666 less the umask: verdict streams quote event payloads,
so a umask such as 077 keeps them private.

Without --rules or --formula, each reference trace is checked against the
policies it embeds (its "policies" list); a policy another trace embeds is
not applicable to it. A reference trace is a finished record: without an
outcome it ends as completed (the summary says so). An event stream without
a closing event ends as the stream ended: open obligations are unresolved.

With --store DIR, the events and verdicts also go into the embedded store
at DIR (the ClickHouse engine installed by make deps), where ponens sql
asks them questions; checking the same traces again replaces their rows.

Prints a short summary (the summary JSON with --json). Exit 1 if some rule
is violated on some trace, or its result by finite-trace semantics is fail
(an unresolved obligation that would fail), or, with --fail-on unresolved,
some cell is unresolved; 0 otherwise; 2 on bad input: a rule that does not
parse or cannot be monitored, or a trace that cannot be read.`,
		Example: `  ponens check --rules examples/rules examples/traces
  ponens check --rules examples/rules --out /tmp --json examples/traces/verify_proved.json
  ponens check --rules examples/rules --out /tmp/ponens-check --verdicts-dir /tmp/ponens-check/verdicts examples/traces
  ponens check --formula 'G(GitCommit → P(RunTests))' --id tests examples/traces/fleet.jsonl
  ponens check --fail-on unresolved --rules examples/rules examples/traces/fleet.jsonl
  ponens check --rules examples/rules --store data/store examples/traces`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitWith(exitBadInput, "ponens check: give at least one trace file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, map[string]string{"enforce": "rules.enforce"})
			if err != nil {
				return err
			}
			if failOn != "violated" && failOn != "unresolved" {
				return exitWith(exitBadInput, "ponens: --fail-on %q: expected violated or unresolved", failOn)
			}
			var given *monitor.Engine     // the engine of --rules and --formula, if given
			var engines []*monitor.Engine // given, and one more per further goroutine
			if rf.given() {
				if engines, err = loadEngines(&rf, cfg.Rules, cfg.Rules.Enforce, runtime.GOMAXPROCS(0)); err != nil {
					return err
				}
				given = engines[0]
			}
			if args, err = traceFiles(args, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if len(args) == 0 {
				return exitWith(exitBadInput, "ponens: no trace files")
			}
			if err := distinctFiles(args); err != nil {
				return err
			}
			if storeDir != "" {
				if err := storeOrEmpty(storeDir); err != nil {
					return exitWith(exitBadInput, "--store %s: %v", storeDir, err)
				}
			}
			var res *checkResult
			if given != nil && storeDir == "" {
				// Event streams are read as they go: memory does not grow with them.
				checked, done, err := streamChecks(args, cfg.Trace, engines, cmd.ErrOrStderr(), newProgress(cmd.ErrOrStderr(), len(args), progressMin, "checking", "files"))
				if err != nil {
					return err
				}
				res, err = writeCheck(given.Rules(), checked, outDir, verdictsDir)
				done()
				if err != nil {
					return err
				}
			} else if res, err = checkWhole(given, args, &cfg, outDir, verdictsDir, storeDir, cmd.ErrOrStderr()); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := file.EncodeSummary(out, res.summary); err != nil {
					return err
				}
				printImplied(cmd.ErrOrStderr(), res.implied)
			} else {
				printCheck(out, res)
			}
			if failed(res.summary, failOn) {
				return &exitError{code: exitViolated}
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&outDir, "out", ".", "the directory summary.json is written to")
	cmd.Flags().StringVar(&verdictsDir, "verdicts-dir", "", "write the verdict streams under this directory instead of beside the traces")
	cmd.Flags().Bool("enforce", false, "enforce rule modes (rules.enforce); without it every rule only observes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary JSON instead of the short summary")
	cmd.Flags().StringVar(&failOn, "fail-on", "violated", "what exits 1: violated (a violated cell or a fail result), or unresolved (that, or an unresolved cell)")
	cmd.Flags().StringVar(&storeDir, "store", "", "also store the events and verdicts in the embedded store at `DIR` (for ponens sql)")
	return cmd
}

// checkWhole checks the trace files read whole: each reference trace
// against its own policies when given is nil, and with storeDir the
// events and verdicts also go into the store.
func checkWhole(given *monitor.Engine, args []string, cfg *config.Config, outDir, verdictsDir, storeDir string, notes io.Writer) (*checkResult, error) {
	runs, release, err := readTraces(args, cfg.Trace, notes)
	if err != nil {
		return nil, exitWith(exitBadInput, "%v", err)
	}
	defer release()
	if err := everyFileHasRuns(args, runs); err != nil {
		return nil, err
	}
	rules, engines, err := runEngines(given, runs, cfg.Rules.HighStakesPaths, cfg.Rules.Enforce, notes)
	if err != nil {
		return nil, err
	}
	res, err := runCheck(rules, engines, runs, outDir, verdictsDir, newProgress(notes, len(runs), progressMin, "checking", "traces"))
	if err != nil {
		return nil, err
	}
	if storeDir != "" {
		if err := storeCheck(cfg.Store.Lib, storeDir, runs, res.streams, res.summary.Rules, notes); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// failed reports whether a check exits 1: a cell is violated or a result
// fail (an open obligation that finite-trace semantics call false is a
// failure even when the stream ended unresolved), or, with --fail-on
// unresolved, a cell is unresolved.
func failed(s *schema.Summary, failOn string) bool {
	if s.Counts[schema.StatusViolated] > 0 || (failOn == "unresolved" && s.Counts[schema.StatusUnresolved] > 0) {
		return true
	}
	for _, row := range s.Matrix.Results {
		if slices.Contains(row, string(eval.Fail)) {
			return true
		}
	}
	return false
}

// loadEngine builds the engine of the rules of --rules and --formula.
func loadEngine(rf *ruleFlags, rc config.RulesConfig, enforce bool) (*monitor.Engine, error) {
	engines, err := loadEngines(rf, rc, enforce, 1)
	if err != nil {
		return nil, err
	}
	return engines[0], nil
}

// loadEngines builds n engines of the rules of --rules and --formula, one
// for each goroutine that monitors runs (an Engine serves one at a time).
func loadEngines(rf *ruleFlags, rc config.RulesConfig, enforce bool, n int) ([]*monitor.Engine, error) {
	set, err := rf.load(rc, enforce)
	if err != nil {
		return nil, err
	}
	engines := make([]*monitor.Engine, max(n, 1))
	for i := range engines {
		var errs []error
		if engines[i], errs = monitor.NewEngine(set); len(errs) > 0 {
			return nil, exitWith(exitBadInput, "%s", compileProblems(set, errs))
		}
	}
	return engines, nil
}

// runEngines gives each run the engine it is checked with, and the rules
// of the summary. With given (rules from --rules or --formula) every run
// has it; without, each run has the policies its trace file embeds, and the
// summary lists every trace's policies.
func runEngines(given *monitor.Engine, runs []namedRun, highStakes []string, enforce bool, notes io.Writer) ([]monitor.Rule, []*monitor.Engine, error) {
	engines := make([]*monitor.Engine, len(runs))
	if given != nil {
		for i := range engines {
			engines[i] = given
		}
		return given.Rules(), engines, nil
	}
	sets, err := runSets(nil, runs, highStakes, enforce, notes)
	if err != nil {
		return nil, nil, err
	}
	var distinct []*monitor.Engine // one per trace file, in order
	var files []string
	for i, nr := range runs {
		if i > 0 && sets[i] == sets[i-1] {
			engines[i] = engines[i-1]
			continue
		}
		eng, errs := monitor.NewEngine(sets[i])
		if len(errs) > 0 {
			return nil, nil, exitWith(exitBadInput, "%s", compileProblems(sets[i], errs))
		}
		engines[i] = eng
		distinct, files = append(distinct, eng), append(files, nr.File)
	}
	rules, err := ruleUnion(distinct, files)
	if err != nil {
		return nil, nil, err
	}
	return rules, engines, nil
}

// compileProblems says which rules the monitor cannot evaluate and why,
// one per line, at the rule's place in its file.
func compileProblems(set *ruleset.Set, errs []error) string {
	where := make(map[string]*ruleset.Rule, len(set.Rules))
	for _, r := range set.Rules {
		where[r.ID] = r
	}
	lines := make([]string, len(errs))
	for i, err := range errs {
		var ce *monitor.CompileError
		if errors.As(err, &ce) {
			if r := where[ce.RuleID]; r != nil {
				lines[i] = fmt.Sprintf("%s:%d:%d: rule %s: cannot be monitored: %s", r.File, r.Line, r.Col, ce.RuleID, ce.Msg)
				continue
			}
		}
		lines[i] = "ponens check: " + err.Error()
	}
	return strings.Join(lines, "\n")
}

// distinctFiles refuses a trace file given twice, under any spelling: its
// runs would be checked twice and its verdict stream written twice.
func distinctFiles(paths []string) error {
	seen := make(map[string]string, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return exitWith(exitBadInput, "ponens check: %s: %v", p, err)
		}
		if first, dup := seen[abs]; dup {
			return exitWith(exitBadInput, "ponens check: trace file %s is given twice (also as %s)", p, first)
		}
		seen[abs] = p
	}
	return nil
}

// everyFileHasRuns refuses a trace file with no event: it holds no run,
// so it would be missing from the summary without a word.
func everyFileHasRuns(paths []string, runs []namedRun) error {
	has := make(map[string]bool, len(paths))
	for _, nr := range runs {
		has[nr.File] = true
	}
	for _, p := range paths {
		if !has[p] {
			return exitWith(exitBadInput, "%s: no events: a trace file holds at least one run", p)
		}
	}
	return nil
}

// checkResult is what a check produced, for the report.
type checkResult struct {
	summary     *schema.Summary
	summaryPath string
	// last holds, per trace, each rule's last verdict.
	last []map[string]schema.VerdictEvent
	// streams holds each trace's verdict stream, in the order of the runs.
	streams [][]schema.VerdictEvent
	// implied are the traces (reference traces without an outcome) that
	// ended as completed because a trace file is a finished record.
	implied []string
}

// checkedRun is one run after the monitor saw it: its verdict stream and
// results, and its events, held (Events) or, for a run read as a stream,
// encoded for the summary's content hash (Encoded, Count, Outcome).
type checkedRun struct {
	File    string
	RunID   string
	Stream  []schema.VerdictEvent
	Results []monitor.Result
	Implied bool // a reference trace without an outcome, ended as completed
	Events  []schema.Event
	Encoded func() io.Reader
	// Verdicts, when set, yields the verdict stream as written; Stream
	// then holds each rule's last verdict only.
	Verdicts func() io.Reader
	Count    int
	Outcome  schema.Outcome
}

// runCheck monitors every run with its own Run of its engine (engines[i]
// for runs[i]) and writes the artifacts (writeCheck).
func runCheck(rules []monitor.Rule, engines []*monitor.Engine, runs []namedRun, outDir, verdictsDir string, prog *progress) (*checkResult, error) {
	checked := make([]checkedRun, len(runs))
	for i, nr := range runs {
		stream, results, err := monitorRun(engines[i], nr)
		if err != nil {
			prog.clear()
			return nil, err
		}
		checked[i] = checkedRun{File: nr.File, RunID: nr.Run.ID, Stream: stream, Results: results, Implied: impliedEnd(nr.Run), Events: nr.Run.Events}
		prog.tick()
	}
	prog.clear()
	return writeCheck(rules, checked, outDir, verdictsDir)
}

// writeCheck lists each checked run's results against rules, then writes
// each verdict stream beside its trace (or under verdictsDir) and
// summary.json into outDir. Bad input is found before anything is written.
func writeCheck(rules []monitor.Rule, checked []checkedRun, outDir, verdictsDir string) (*checkResult, error) {
	perFile := make(map[string]int)
	for _, c := range checked {
		perFile[c.File]++
	}
	srcs := make([]file.Source, len(checked))
	for i, c := range checked {
		srcs[i] = file.Source{File: c.File, RunID: c.RunID, Multi: perFile[c.File] > 1}
	}
	places, err := file.Layout(srcs, verdictsDir)
	if err != nil {
		return nil, exitWith(exitBadInput, "ponens check: %v", err)
	}
	check, err := file.NewCheck(rules, outDir)
	if err != nil {
		return nil, err
	}
	res := &checkResult{summaryPath: check.SummaryPath(), last: make([]map[string]schema.VerdictEvent, len(checked))}
	for i, c := range checked {
		if c.Implied {
			res.implied = append(res.implied, places[i].ID)
		}
		t := file.Trace{ID: places[i].ID, RunID: c.RunID, Verdicts: places[i].Verdicts, Events: c.Events, Stream: c.Stream, Results: expandResults(rules, c.Results)}
		if c.Encoded != nil {
			t.Encoded, t.Count, t.Outcome = c.Encoded(), c.Count, c.Outcome
		}
		if err := check.AddTrace(t); err != nil {
			return nil, fmt.Errorf("internal error: %w", err)
		}
		res.streams = append(res.streams, c.Stream)
		res.last[i] = make(map[string]schema.VerdictEvent)
		for _, v := range c.Stream {
			res.last[i][v.Rule.ID] = v
		}
	}
	if err := writeVerdictFiles(places, checked); err != nil {
		return nil, err
	}
	if err := check.WriteSummary(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", check.SummaryPath(), err)
	}
	res.summary = check.Summary()
	return res, nil
}

// verdictWriters is how many verdict files are written at once: writing
// one is mostly waiting on the file system (a temporary file, renamed).
const verdictWriters = 8

// writeVerdictFiles writes each checked run's verdict stream to its place,
// several at a time; the error is that of the first place that failed.
func writeVerdictFiles(places []file.Place, checked []checkedRun) error {
	errs := make([]error, len(places))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(verdictWriters, len(places)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p, c := places[i], &checked[i]
				if c.Verdicts != nil {
					errs[i] = file.WriteVerdictsFrom(p.Verdicts, c.Verdicts())
				} else {
					errs[i] = file.WriteVerdicts(p.Verdicts, c.Stream)
				}
			}
		}()
	}
	for i := range places {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("writing the verdict stream of %s: %w", places[i].ID, err)
		}
	}
	return nil
}

// monitorRun feeds a run's events, in order, to a new monitor Run and ends
// it when no closing event came. It returns the verdict stream and the
// final results.
func monitorRun(eng *monitor.Engine, nr namedRun) ([]schema.VerdictEvent, []monitor.Result, error) {
	run := eng.NewRun(nr.Run.ID)
	var stream []schema.VerdictEvent
	var closing *schema.Event
	for i := range nr.Run.Events {
		ev := &nr.Run.Events[i]
		vs, err := run.Add(ev)
		if errors.Is(err, monitor.ErrEnded) {
			return nil, nil, exitWith(exitBadInput, "%s: run %s: event seq %d comes after the run ended with %s (seq %d)",
				nr.File, nr.Run.ID, ev.Seq, closing.Type, closing.Seq)
		} else if err != nil {
			return nil, nil, exitWith(exitBadInput, "%s: run %s: event seq %d: %v", nr.File, nr.Run.ID, ev.Seq, err)
		}
		if ev.Type.IsTerminal() {
			closing = ev
		}
		stream = append(stream, vs...)
	}
	if !run.Ended() {
		stream = append(stream, run.End()...)
	}
	return stream, run.Results(), nil
}

// maxListed caps the cells the short summary lists.
const maxListed = 20

// printCheck writes the short summary: the counts, the cells that did not
// end satisfied, and where the summary went.
func printCheck(w io.Writer, res *checkResult) {
	s := res.summary
	na := 0
	for _, row := range s.Matrix.Results {
		for _, r := range row {
			if r == "not_applicable" {
				na++
			}
		}
	}
	fmt.Fprintf(w, "%s × %s: %d satisfied, %d violated, %d pending, %d unresolved (%d not applicable)\n",
		plural(len(s.Rules), "rule"), plural(len(s.Traces), "trace"),
		s.Counts[schema.StatusSatisfied], s.Counts[schema.StatusViolated], s.Counts[schema.StatusPending], s.Counts[schema.StatusUnresolved], na)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	listed, more := 0, 0
	for _, want := range []schema.VerdictStatus{schema.StatusViolated, schema.StatusUnresolved, schema.StatusPending} {
		for i, rule := range s.Matrix.Rules {
			for j, tr := range s.Matrix.Traces {
				if s.Matrix.Cells[i][j] != want {
					continue
				}
				if listed == maxListed {
					more++
					continue
				}
				listed++
				fmt.Fprintf(tw, "  %s\t%s\t%s", want, rule, tr)
				if v, ok := res.last[j][rule]; ok && want == schema.StatusViolated {
					fmt.Fprintf(tw, "\tat seq %d", v.Seq)
				}
				fmt.Fprintln(tw)
			}
		}
	}
	tw.Flush()
	if more > 0 {
		fmt.Fprintf(w, "  … and %d more in %s\n", more, res.summaryPath)
	}
	printImplied(w, res.implied)
	fmt.Fprintf(w, "wrote %s and %s\n", res.summaryPath, plural(len(s.Traces), "verdict stream"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// progressMin is the number of traces above which a terminal gets a
// progress bar.
const progressMin = 20

// printImplied says which reference traces, having no outcome, ended as
// completed.
func printImplied(w io.Writer, implied []string) {
	n := len(implied)
	if n == 0 {
		return
	}
	names := strings.Join(implied[:min(n, 3)], ", ")
	if n > 3 {
		names += ", …"
	}
	fmt.Fprintf(w, "%s without an outcome ended as completed (a trace file is a finished record): %s\n", plural(n, "reference trace"), names)
}
