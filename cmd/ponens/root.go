package main

import (
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ponens",
		Short: "Runtime monitor for AI coding agents",
		Long: `ponens checks what AI coding agents do against temporal-logic policies and
POLICY.md capability rules: offline over trace files (check, eval, decide),
or live over a fleet's event stream on NATS JetStream (serve, worker).

Exit codes: 0 all well, 1 a rule violated (or a step not allowed, for
decide), 2 bad input or usage, 3 a service (NATS) could not be reached.`,
		Example: `  ponens check --rules examples/rules examples/traces
  ponens serve --rules examples/rules --demo`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every command reads the configuration the same way, so a missing
		// --config file or an unknown key is refused by each alike.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			_, err := loadConfig(cmd, nil)
			return err
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitWith(exitBadInput, "%v", err)
	})
	root.PersistentFlags().String("config", "", "read the settings from this YAML `FILE`; PONENS_* environment variables and flags override it")
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	setHelp(root)
	return root
}

// subcommands lists the constructors of every top-level subcommand. Each
// subcommand's file appends its constructor in an init function, so that
// commands stay in their own files and root.go does not change when one is
// added.
var subcommands []func() *cobra.Command

// loadConfig loads the configuration for cmd: --config, the environment, and
// the flags of cmd named in binds (flag name → config key).
func loadConfig(cmd *cobra.Command, binds map[string]string) (config.Config, error) {
	path, _ := cmd.Flags().GetString("config")
	c, err := config.Load(path, cmd.Flags(), binds)
	if err != nil {
		return c, exitWith(exitBadInput, "%v", err)
	}
	return c, nil
}

// groupCommand is a command that only holds subcommands: without one it
// prints its help; an unknown one is a usage error.
func groupCommand(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitWith(exitBadInput, "unknown command %q (see %s --help)", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}
