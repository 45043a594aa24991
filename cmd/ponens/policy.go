package main

import "github.com/spf13/cobra"

func init() { subcommands = append(subcommands, newPolicyCommand) }

// policySubcommands lists the constructors of the `ponens policy …`
// subcommands; each one's file appends to it in an init function.
var policySubcommands []func() *cobra.Command

func newPolicyCommand() *cobra.Command {
	cmd := groupCommand("policy", "Validate, inspect and convert policies (LTLf rules and POLICY.md)")
	cmd.Example = `  ponens policy check examples/rules
  ponens policy validate examples/rules/POLICY.md
  ponens policy list --dir examples/rules`
	for _, add := range policySubcommands {
		cmd.AddCommand(add())
	}
	return cmd
}
