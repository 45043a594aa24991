package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/trace"
)

func init() { subcommands = append(subcommands, newEvalCommand) }

// ruleFlags are the rule-selecting flags `eval` and `check` share.
type ruleFlags struct {
	formulas, ids, rules []string
	cmd                  *cobra.Command // for notes on stderr
}

// notes is where notes about the rules go: the command's stderr.
func (f *ruleFlags) notes() io.Writer {
	if f.cmd == nil {
		return os.Stderr
	}
	return f.cmd.ErrOrStderr()
}

// given reports whether any rule was given (--rules or --formula).
func (f *ruleFlags) given() bool { return len(f.formulas) > 0 || len(f.rules) > 0 }

func (f *ruleFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringArrayVar(&f.formulas, "formula", nil, "a formula to evaluate (repeatable)")
	cmd.Flags().StringArrayVar(&f.ids, "id", nil, "the id of the --formula at the same position (default formula-N)")
	cmd.Flags().StringArrayVar(&f.rules, "rules", nil, "a policy file or directory (repeatable)")
}

// load builds the rule set from --rules and --formula, with the configured
// high-stakes paths and enforce switch.
func (f *ruleFlags) load(rc config.RulesConfig, enforce bool) (*ruleset.Set, error) {
	highStakes := rc.HighStakesPaths
	if len(f.formulas) == 0 && len(f.rules) == 0 {
		return nil, exitWith(exitBadInput, "ponens: give at least one --formula or --rules")
	}
	if len(f.ids) > len(f.formulas) {
		return nil, exitWith(exitBadInput, "ponens: %d --id for %d --formula", len(f.ids), len(f.formulas))
	}
	set := &ruleset.Set{}
	var probs ruleset.Problems
	if len(f.rules) > 0 {
		set, probs = ruleset.LoadLimited(rc.MaxFileBytes, f.rules...)
		for _, p := range set.Skipped {
			fmt.Fprintf(f.notes(), "note: %v\n", p)
		}
	}
	for i, text := range f.formulas {
		id := fmt.Sprintf("formula-%d", i+1)
		if i < len(f.ids) {
			id = f.ids[i]
		}
		r, p := ruleset.FromFormula(id, text)
		probs = append(probs, p...)
		if r != nil {
			probs = append(probs, set.Add(r)...)
		}
	}
	if len(probs) > 0 {
		return nil, exitWith(exitBadInput, "%s", probs.Error())
	}
	set.Opts.HighStakesPaths = append(set.Opts.HighStakesPaths, highStakes...)
	set.Enforce = set.Enforce || enforce
	return set, nil
}

func newEvalCommand() *cobra.Command {
	var rf ruleFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "eval [--json] [(--formula FORMULA [--id ID] | --rules PATH)...] TRACE...",
		Short: "Evaluate rules on trace files with the reference evaluator",
		Long: `Evaluate every rule on every run of the trace files with the reference
evaluator (the direct semantics of the policy language over a complete
trace) and print pass, fail with the witnessing action ids, or
not_applicable. Without --rules or --formula, each reference trace is
evaluated against the policies it embeds. The capability rules of POLICY.md
files have no formula: they are skipped with a note (check and decide judge
them). Exit 0 if nothing failed, 1 if some rule failed, 2 on bad input.`,
		Example: `  ponens eval --rules examples/rules/gallery.yaml examples/traces
  ponens eval --json --formula 'G(GitCommit → P(RunTests ∧ completed))' --id tbc examples/traces/verify_proved.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, nil)
			if err != nil {
				return err
			}
			var set *ruleset.Set // the rules of --rules and --formula, if given
			if rf.given() {
				if set, err = rf.load(cfg.Rules, cfg.Rules.Enforce); err != nil {
					return err
				}
			}
			files, err := traceFiles(args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			runs, release, err := readTraces(files, cfg.Trace, cmd.ErrOrStderr())
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			defer release()
			type row struct {
				Rule      string  `json:"rule"`
				Trace     string  `json:"trace"`
				Result    string  `json:"result"`
				Witnesses []int64 `json:"witnesses"`
			}
			sets, err := runSets(set, runs, cfg.Rules.HighStakesPaths, cfg.Rules.Enforce, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var rows []row
			failed := false
			for i, nr := range runs {
				t := trace.Build(nr.Run.ID, nr.Run.Events)
				set := sets[i]
				for _, r := range evaluable(set, cmd.ErrOrStderr(), i == 0 || set != sets[i-1]) {
					res := eval.Evaluate(r.Formula, t, set.Options(r))
					failed = failed || res.Outcome == eval.Fail
					w := res.Witnesses
					if w == nil {
						w = []int64{}
					}
					rows = append(rows, row{Rule: r.ID, Trace: nr.Name, Result: string(res.Outcome), Witnesses: w})
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSONLines(out, rows); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RULE\tTRACE\tRESULT\tWITNESSES")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", r.Rule, r.Trace, r.Result, r.Witnesses)
				}
				tw.Flush()
			}
			if failed {
				return &exitError{code: exitViolated}
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per (rule, trace) per line")
	cmd.SetErr(os.Stderr)
	return cmd
}

// evaluable is the rules of set that have a formula. The capability rules
// of POLICY.md files have none: the reference evaluator cannot judge them,
// so each is skipped, with a note on notes when note is set (`check` and
// `decide` judge them).
func evaluable(set *ruleset.Set, notes io.Writer, note bool) []*ruleset.Rule {
	var out []*ruleset.Rule
	for _, r := range set.Rules {
		if r.Formula == nil {
			if !note {
				continue
			}
			fmt.Fprintf(notes, "ponens eval: skipping %s (%s:%d): a POLICY.md rule has no formula; check and decide judge it\n", r.ID, r.File, r.Line)
			continue
		}
		out = append(out, r)
	}
	return out
}

// runSets gives each run the rule set it is evaluated with: given (from
// --rules and --formula) when there is one, else the policies its trace
// file embeds.
func runSets(given *ruleset.Set, runs []namedRun, highStakes []string, enforce bool, notes io.Writer) ([]*ruleset.Set, error) {
	out := make([]*ruleset.Set, len(runs))
	if given != nil {
		for i := range out {
			out[i] = given
		}
		return out, nil
	}
	var files []string
	for _, nr := range runs {
		if !nr.Reference || !embedsPolicies(nr.Run) {
			return nil, exitWith(exitBadInput, "ponens: give at least one --formula or --rules (%s is not a reference trace embedding policies to check it against)", nr.Name)
		}
		if !slices.Contains(files, nr.File) {
			files = append(files, nr.File)
		}
	}
	sets, err := embeddedSets(files, highStakes, enforce, notes)
	if err != nil {
		return nil, err
	}
	for i, nr := range runs {
		out[i] = sets[nr.File]
	}
	return out, nil
}
