package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newVersionCommand) }

// version and commit are set by the Makefile (-ldflags "-X main.version=…
// -X main.commit=…"); when empty, the module version and the VCS revision
// the Go toolchain records in the binary are used.
var version, commit string

// versionString is "ponens VERSION (commit COMMIT, GOVERSION)".
func versionString() string {
	v, c := version, commit
	dirty := false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	} else if len(c) > 12 {
		c = c[:12]
	}
	if dirty && commit == "" {
		c += "-dirty"
	}
	return fmt.Sprintf("ponens %s (commit %s, %s)", v, c, runtime.Version())
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, commit and Go version",
		Example: "  ponens version\n  ponens --version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}
