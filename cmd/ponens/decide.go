package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/monitor/remote"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newDecideCommand) }

func newDecideCommand() *cobra.Command {
	var rf ruleFlags
	var history, runID, mode string
	var asJSON, newRun bool
	cmd := &cobra.Command{
		Use:   "decide [--json] (--rules PATH... [--formula FORMULA [--mode MODE]] [--history TRACE] | --run ID [--new-run] [--url URL]) INTENT.json",
		Short: "Decide whether a proposed step may run: allow, deny or require_approval",
		Long: `Judge a proposed step before it runs. INTENT.json is an ActionIntent (the
JSON a tool call is described with: capability, toolName, payload, …), an
action object, or an action event. The answer combines the POLICY.md
authorization engine with every temporal rule whose mode is deny, suspend
or abort that the step would violate, given the run's history (--history:
a trace file with one run that has not ended); the history is not changed.
Rule modes are enforced for the decision whatever the rules file says about
enforce. A --formula has the mode --mode (default deny).

With --run, the question goes to the running service instead: the worker
that owns the run answers from the run's live state. A run that has ended
is refused; so is a run the service has seen no event of, unless --new-run
asks to judge it as a new run.

Exit 0 when the step is allowed, 1 when it is denied or needs approval, 2
on bad input (a run that has ended or is unknown too), 3 when the service
cannot be reached.`,
		Example: `  ponens decide --rules examples/rules examples/decide/intent.json
  ponens decide --rules examples/rules --history examples/decide/history.jsonl examples/decide/commit.json
  ponens decide --formula 'G(GitCommit → P(RunTests))' examples/decide/commit.json
  ponens decide --run fleet-run-1 --url nats://127.0.0.1:4222 examples/decide/commit.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := decideFlagsFit(cmd, runID != ""); err != nil {
				return err
			}
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
			if err != nil {
				return err
			}
			if runID != "" {
				return decideLive(cmd, cfg, runID, args[0], newRun, asJSON)
			}
			if !validMode(mode) {
				return exitWith(exitBadInput, "--mode: expected deny, suspend, abort or observe, got %q", mode)
			}
			set, err := rf.load(cfg.Rules, true)
			if err != nil {
				return err
			}
			for _, r := range set.Rules {
				if r.File == "--formula" {
					r.Mode = ruleset.Mode(mode)
				}
			}
			eng, errs := monitor.NewEngine(set)
			if len(errs) > 0 {
				return exitWith(exitBadInput, "%v", errs[0])
			}
			run, lastID, err := replayHistory(eng, history, cfg.Trace, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			action, err := readProposal(args[0], lastID+1)
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			return printDecision(cmd, run.Decide(action), asJSON)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&mode, "mode", string(ruleset.Deny), "the mode of each --formula: deny, suspend, abort or observe")
	cmd.Flags().StringVar(&history, "history", "", "the run so far: a trace file with one run")
	cmd.Flags().StringVar(&runID, "run", "", "ask the running service about this run instead of deciding locally")
	cmd.Flags().BoolVar(&newRun, "new-run", false, "with --run: judge a run the service has seen no event of as a new run")
	cmd.Flags().String("url", "", "with --run: NATS URL of the running service (nats.url; default: a local ponens serve at nats.listen)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"decision","rule","reason","source"}`)
	return cmd
}

// decideFlagsFit refuses flags that do nothing for the form asked for: the
// local form (rules, history) or the live one (--run).
func decideFlagsFit(cmd *cobra.Command, live bool) error {
	if live {
		for _, name := range []string{"rules", "formula", "id", "mode", "history"} {
			if cmd.Flags().Changed(name) {
				return exitWith(exitBadInput, "--%s decides locally: it cannot be given with --run", name)
			}
		}
		return nil
	}
	for _, name := range []string{"new-run", "url"} {
		if cmd.Flags().Changed(name) {
			return exitWith(exitBadInput, "--%s is for asking the running service: give --run ID with it", name)
		}
	}
	return nil
}

// validMode reports whether m is a rule mode.
func validMode(m string) bool {
	switch ruleset.Mode(m) {
	case ruleset.Deny, ruleset.Suspend, ruleset.Abort, ruleset.Observe:
		return true
	}
	return false
}

// replayHistory starts a run of eng and feeds it the history, a trace file
// holding one run that has not ended; it returns the run and the largest
// action id seen.
func replayHistory(eng *monitor.Engine, history string, limits config.TraceConfig, notes io.Writer) (*monitor.Run, int64, error) {
	if history == "" {
		return eng.NewRun("decide"), 0, nil
	}
	files, err := traceFiles([]string{history}, notes)
	if err != nil {
		return nil, 0, err
	}
	runs, release, err := readTraces(files, limits, notes)
	if err != nil {
		return nil, 0, exitWith(exitBadInput, "%v", err)
	}
	defer release()
	if len(runs) != 1 {
		return nil, 0, exitWith(exitBadInput, "%s: the history must hold exactly one run, it holds %d", history, len(runs))
	}
	events := runs[0].Run.Events
	if impliedEnd(runs[0].Run) {
		// A reference trace without an outcome is, as a history, the run
		// so far: the run.finish it would end with is not part of it.
		events = events[:len(events)-1]
	}
	run := eng.NewRun(runs[0].Run.ID)
	var lastID int64
	for i := range events {
		if events[i].Type.IsTerminal() {
			return nil, 0, exitWith(exitBadInput, "%s: the run has ended (%s at seq %d): no step can follow", history, events[i].Type, events[i].Seq)
		}
		if a := events[i].Action; a != nil && a.ID > lastID {
			lastID = a.ID
		}
		if _, err := run.Add(&events[i]); err != nil {
			return nil, 0, exitWith(exitBadInput, "%s: %v", history, err)
		}
	}
	return run, lastID, nil
}

// decideLive asks the worker that owns runID.
func decideLive(cmd *cobra.Command, cfg config.Config, runID, intent string, newRun, asJSON bool) error {
	action, err := readProposal(intent, 0)
	if err != nil {
		return exitWith(exitBadInput, "%v", err)
	}
	ctx, stop := commandContext(cmd)
	defer stop()
	url := natsURL(cfg.NATS)
	nc, err := connectNATS(cfg.NATS, transport.RoleAgent, "ponens decide", false)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var opts []remote.DecideOption
	if newRun {
		opts = append(opts, remote.NewRun())
	}
	d, err := remote.Decide(ctx, nc, subjectsOf(cfg), runID, action, opts...)
	switch {
	case errors.Is(err, remote.ErrRunEnded):
		// The worker's answer already says the run has ended: print it once.
		msg := strings.TrimSuffix(strings.TrimPrefix(err.Error(), "decide: "), ": "+remote.ErrRunEnded.Error())
		return exitWith(exitBadInput, "%s", msg)
	case errors.Is(err, remote.ErrRunUnknown):
		return exitWith(exitBadInput, "run %q is unknown to the service at %s: no event of it has been processed (give --new-run to judge it as a new run)", runID, url)
	case err != nil:
		return exitWith(exitUnavailable, "%s: %v", url, err)
	}
	return printDecision(cmd, d, asJSON)
}

func printDecision(cmd *cobra.Command, d monitor.Decision, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		if err := writeJSONLines(out, []monitor.Decision{d}); err != nil {
			return err
		}
		return decisionExit(d)
	}
	fmt.Fprintf(out, "%s", d.Decision)
	if d.Rule != nil {
		fmt.Fprintf(out, " by %s (%s)", *d.Rule, *d.Source)
	}
	fmt.Fprintf(out, ": %s\n", d.Reason)
	return decisionExit(d)
}

// decisionExit is exit 0 for allow, 1 for any other decision.
func decisionExit(d monitor.Decision) error {
	if d.Decision != "allow" {
		return &exitError{code: exitViolated}
	}
	return nil
}

// readProposal reads the proposed step: an action event, an action object
// (it has a "type"), or an ActionIntent (it has none). An intent becomes a
// ToolCall action numbered id.
func readProposal(path string, id int64) (*schema.Action, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: expected a JSON object (an ActionIntent, an action or an action event): %v", path, err)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		return nil
	}
	var typ string
	_ = json.Unmarshal(probe["type"], &typ)
	switch {
	case typ == string(schema.TypeAction) && probe["action"] != nil:
		var ev schema.Event
		if err := strict(&ev); err != nil {
			return nil, err
		}
		if err := ev.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		return ev.Action, nil
	case typ != "":
		var a schema.Action
		if err := strict(&a); err != nil {
			return nil, err
		}
		if a.ID == 0 {
			a.ID = id
		}
		return &a, nil
	}
	var in policymd.Intent
	if err := strict(&in); err != nil {
		return nil, err
	}
	if in.Capability == "" {
		return nil, fmt.Errorf("%s: capability: expected the capability the step needs (e.g. file.write)", path)
	}
	a := policymd.ActionFromIntent(&in, id)
	return &a, nil
}
