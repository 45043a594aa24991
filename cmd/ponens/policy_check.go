package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/policy/ruleset"
)

func init() { policySubcommands = append(policySubcommands, newPolicyCheckCommand) }

func newPolicyCheckCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [--json] PATH...",
		Short: "Validate temporal policy files: parse, classify and check every rule",
		Long: `Validate gallery policy JSON, policy objects and ponens rules files (YAML),
or every such file in a directory. Each rule is parsed, checked, printed in
canonical form and classified to its language level; a declared
language_level lower than the one the formula needs is an error. A formula
that is exactly the name of a standard check (data_flow_integrity,
goals_reference_valid_artifacts, …) means that check's definition, printed
as NAME ≡ FORMULA. Exit 0 if every rule is valid, 2 otherwise.`,
		Example: `  ponens policy check examples/rules
  ponens policy check --json examples/rules/gallery.yaml
  ponens policy check examples/checks/standard.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set, probs := ruleset.Load(args...)
			type row struct {
				ID            string `json:"id"`
				File          string `json:"file"`
				Level         string `json:"level"`
				DeclaredLevel string `json:"declared_level"`
				Printed       string `json:"printed"`
				Check         string `json:"check,omitempty"`
				Error         string `json:"error"`
			}
			var rows []row
			for _, r := range set.Rules {
				declared := ""
				if r.Declared != nil {
					declared = r.Declared.String()
				}
				rows = append(rows, row{ID: r.ID, File: r.File, Level: levelOf(r), DeclaredLevel: declared, Printed: r.Text, Check: r.Check})
			}
			for _, p := range probs {
				rows = append(rows, row{ID: p.RuleID, File: p.File, Error: p.Error()})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSONLines(out, rows); err != nil {
					return err
				}
			} else {
				for _, r := range set.Rules {
					text := r.Text
					if r.Check != "" { // a standard check: show what its name means
						text = r.Check + " ≡ " + text
					}
					fmt.Fprintf(out, "ok    %s  %s  %s\n", r.ID, levelOf(r), text)
				}
				for _, p := range probs {
					fmt.Fprintf(cmd.ErrOrStderr(), "error %s\n", p.Error())
					if p.Excerpt != "" {
						fmt.Fprintln(cmd.ErrOrStderr(), p.Excerpt)
					}
				}
			}
			if len(probs) > 0 {
				return exitWith(exitBadInput, "%s", plural(len(probs), "problem"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per rule per line")
	return cmd
}

// levelOf is a rule's language level, or "policy.md" for a capability rule
// of a POLICY.md file, which has no formula.
func levelOf(r *ruleset.Rule) string {
	if r.Capability != nil {
		return "policy.md"
	}
	return r.Level.String()
}
