// Command ponens is the runtime monitor for AI coding agents: it checks trace
// files against temporal-logic and POLICY.md rules, and runs the streaming
// fleet service. See the README for every subcommand.
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the ponens command line args, writing to stdout and stderr,
// and returns the process exit code (exitCode decides it).
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	return report(stderr, cmd, err)
}
