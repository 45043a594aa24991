package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/jetstream"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/schema"
)

func init() { subcommands = append(subcommands, newDecideCommand) }

func newDecideCommand() *cobra.Command {
	var rf ruleFlags
	var history, runID string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "decide [--json] (--rules PATH... [--history TRACE] | --run ID [--url NATS]) INTENT.json",
		Short: "Decide whether a proposed step may run: allow, deny or require_approval",
		Long: `Judge a proposed step before it runs. INTENT.json is an ActionIntent
(seed 004 §5), an action object, or an action event. The answer combines the
POLICY.md authorization engine with every temporal rule whose mode is deny,
suspend or abort that the step would violate, given the run's history (a
trace file with one run); the history is not changed. With --run, the
question goes to the running service instead: the worker that owns the run
answers from the run's live state. Rule modes are
enforced for the decision whatever the rules file says about enforce.
Exit 0 for any decision, 2 on bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
			if err != nil {
				return err
			}
			if runID != "" { // ask the live service
				action, err := readProposal(args[0], 0)
				if err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				ctx, stop := commandContext(cmd)
				defer stop()
				nc, err := nats.Connect(natsURL(cfg.NATS), nats.Name("ponens decide"))
				if err != nil {
					return exitWith(exitNotStored, "ponens decide: %v", err)
				}
				defer nc.Close()
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				d, err := jetstream.Decide(ctx, nc, subjectsOf(cfg), runID, action)
				if err != nil {
					return exitWith(exitNotStored, "ponens decide: %v", err)
				}
				return printDecision(cmd, d, asJSON)
			}
			set, err := rf.load(cfg.Rules.HighStakesPaths, true)
			if err != nil {
				return err
			}
			eng, errs := monitor.NewEngine(set)
			if len(errs) > 0 {
				return exitWith(exitBadInput, "ponens: %v", errs[0])
			}
			runID := "decide"
			var events []schema.Event
			if history != "" {
				runs, err := readTraces([]string{history}, cfg.Trace.MaxEventBytes)
				if err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				if len(runs) != 1 {
					return exitWith(exitBadInput, "%s: the history must hold exactly one run, it holds %d", history, len(runs))
				}
				runID, events = runs[0].Run.ID, runs[0].Run.Events
			}
			run := eng.NewRun(runID)
			var lastID int64
			for i := range events {
				if events[i].Type.IsTerminal() {
					return exitWith(exitBadInput, "%s: the run has ended (%s at seq %d): no step can follow", history, events[i].Type, events[i].Seq)
				}
				if a := events[i].Action; a != nil && a.ID > lastID {
					lastID = a.ID
				}
				if _, err := run.Add(&events[i]); err != nil {
					return exitWith(exitBadInput, "%s: %v", history, err)
				}
			}
			action, err := readProposal(args[0], lastID+1)
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			return printDecision(cmd, run.Decide(action), asJSON)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&history, "history", "", "the run so far: a trace file with one run")
	cmd.Flags().StringVar(&runID, "run", "", "ask the running service (nats.url, --url) about this run instead of deciding locally")
	cmd.Flags().String("url", "", "NATS URL of the running service (nats.url; empty: a local ponens serve at nats.listen)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"decision","rule","reason","source"}`)
	return cmd
}

func printDecision(cmd *cobra.Command, d monitor.Decision, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		return writeJSONLines(out, []monitor.Decision{d})
	}
	fmt.Fprintf(out, "%s", d.Decision)
	if d.Rule != nil {
		fmt.Fprintf(out, " by %s (%s)", *d.Rule, *d.Source)
	}
	fmt.Fprintf(out, ": %s\n", d.Reason)
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
