package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
)

// Exit codes shared by every subcommand (DESIGN.md §3).
const (
	exitOK       = 0 // all satisfied / valid
	exitViolated = 1 // some rule violated or failed
	exitBadInput = 2 // unreadable input or usage error
)

// exitError carries a process exit code out of a cobra RunE. An empty msg
// means the command already printed what the user needs.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d: %s", e.code, e.msg) }

// exitWith returns an error that makes main exit with code after printing msg.
func exitWith(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "ponens",
		Short:         "Runtime monitor for AI coding agents",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitWith(exitBadInput, "ponens: %v", err)
	})
	root.PersistentFlags().String("config", "", "config file (YAML); PONENS_* environment variables override it")
	for _, add := range subcommands {
		root.AddCommand(add())
	}
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
		return c, exitWith(exitBadInput, "ponens: %v", err)
	}
	return c, nil
}
