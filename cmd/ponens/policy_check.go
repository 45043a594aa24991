package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/policy/stdcheck"
)

func init() { policySubcommands = append(policySubcommands, newPolicyCheckCommand) }

func newPolicyCheckCommand() *cobra.Command {
	var asJSON, strict bool
	var traces []string
	cmd := &cobra.Command{
		Use:   "check [--json] [--strict] [--traces PATH]... PATH...",
		Short: "Validate temporal policy files: parse, classify and check every rule",
		Long: `Validate gallery policy JSON, policy objects, the policies embedded in
reference traces and ponens rules files (YAML), or every such file in a
directory. Each rule is parsed, checked, printed in canonical form and
classified to its language level; a declared language_level lower than the
one the formula needs is an error, as is a misspelled field ponens reads
("fromula"). Other fields are kept as metadata (under "metadata" with
--json). A formula that is exactly the name of a standard check
(data_flow_integrity, goals_reference_valid_artifacts, …) means that
check's definition, printed as NAME ≡ FORMULA.

Names that are probably typos are warned about: a CamelCase type that is
neither a type of the trace format nor one the --traces use, a lowercase
atom that is neither built in, a defined predicate, nor a flag of the
--traces; with the closest known name. --strict also warns about fields
that no policy catalogue is known to use, and makes any warning fail.

Exit 0 if every rule is valid, 2 otherwise (or, with --strict, on a
warning).`,
		Example: `  ponens policy check examples/rules
  ponens policy check --json examples/rules/gallery.yaml
  ponens policy check --strict --traces examples/traces examples/rules/gallery.yaml
  ponens policy check examples/checks/standard.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var vocab ruleset.Vocabulary
			if len(traces) > 0 {
				cfg, err := loadConfig(cmd, nil)
				if err != nil {
					return err
				}
				files, err := traceFiles(traces, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				runs, release, err := readTraces(files, cfg.Trace, cmd.ErrOrStderr())
				if err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				defer release()
				for _, nr := range runs {
					vocab.Learn(nr.Run.Events)
				}
			}
			set, probs := ruleset.Load(args...)
			warns := set.Lint(vocab, knownNames()...)
			if strict {
				warns = append(warns, set.Notes...)
			}
			warns = append(warns, set.Skipped...)
			printPolicyCheck(cmd, set, probs, warns, asJSON)
			switch {
			case len(probs) > 0:
				return exitWith(exitBadInput, "%s", plural(len(probs), "problem"))
			case strict && len(warns) > 0:
				return exitWith(exitBadInput, "%s (--strict)", plural(len(warns), "warning"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per rule per line")
	cmd.Flags().BoolVar(&strict, "strict", false, "warn about fields no catalogue uses too, and exit 2 on any warning")
	cmd.Flags().StringArrayVar(&traces, "traces", nil, "a trace file or directory whose types and flags are known names (repeatable)")
	return cmd
}

// knownNames are lowercase names that are known atoms besides the
// built-in ones and a set's predicates: the standard checks.
func knownNames() []string { return stdcheck.Names() }

// printPolicyCheck writes the result of a policy check: a line per valid
// rule on stdout, each problem and warning on stderr (with --json, one
// object per rule and per problem on stdout, warnings with their rule).
func printPolicyCheck(cmd *cobra.Command, set *ruleset.Set, probs, warns ruleset.Problems, asJSON bool) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if !asJSON {
		for _, r := range set.Rules {
			text := r.Text
			if r.Check != "" { // a standard check: show what its name means
				text = r.Check + " ≡ " + text
			}
			fmt.Fprintf(out, "ok    %s  %s  %s\n", r.ID, levelOf(r), text)
		}
		for _, w := range warns {
			fmt.Fprintf(errOut, "warning %s\n", w.Error())
		}
		for _, p := range probs {
			fmt.Fprintf(errOut, "error %s\n", p.Error())
			if p.Excerpt != "" {
				fmt.Fprintln(errOut, p.Excerpt)
			}
		}
		return
	}
	type row struct {
		ID            string         `json:"id"`
		File          string         `json:"file"`
		Level         string         `json:"level"`
		DeclaredLevel string         `json:"declared_level"`
		Printed       string         `json:"printed"`
		Check         string         `json:"check,omitempty"`
		Error         string         `json:"error"`
		Warnings      []string       `json:"warnings,omitempty"`
		Metadata      map[string]any `json:"metadata,omitempty"`
	}
	var rows []row
	ruleWarns := map[*ruleset.Rule][]string{}
	var loose []string
	for _, w := range warns {
		if r := ruleOf(set, w); r != nil {
			ruleWarns[r] = append(ruleWarns[r], w.Error())
		} else {
			loose = append(loose, w.Error())
		}
	}
	for _, r := range set.Rules {
		declared := ""
		if r.Declared != nil {
			declared = r.Declared.String()
		}
		rows = append(rows, row{ID: r.ID, File: r.File, Level: levelOf(r), DeclaredLevel: declared, Printed: r.Text, Check: r.Check,
			Warnings: ruleWarns[r], Metadata: r.Metadata})
	}
	for _, p := range probs {
		rows = append(rows, row{ID: p.RuleID, File: p.File, Error: p.Error()})
	}
	for _, w := range loose {
		fmt.Fprintf(errOut, "warning %s\n", w)
	}
	_ = writeJSONLines(out, rows)
}

// ruleOf is the rule of set a warning is about, or nil.
func ruleOf(set *ruleset.Set, w *ruleset.Problem) *ruleset.Rule {
	for _, r := range set.Rules {
		if r.ID == w.RuleID && r.File == w.File {
			return r
		}
	}
	return nil
}

// levelOf is a rule's language level, or "policy.md" for a capability rule
// of a POLICY.md file, which has no formula.
func levelOf(r *ruleset.Rule) string {
	if r.Capability != nil {
		return "policy.md"
	}
	return r.Level.String()
}
