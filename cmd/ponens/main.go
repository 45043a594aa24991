// Command ponens is the runtime monitor for AI coding agents: it checks trace
// files against temporal-logic and POLICY.md rules, and runs the streaming
// fleet service. See the README for every subcommand.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		var ex *exitError
		if errors.As(err, &ex) {
			if ex.msg != "" {
				fmt.Fprintln(os.Stderr, ex.msg)
			}
			os.Exit(ex.code)
		}
		fmt.Fprintln(os.Stderr, "ponens:", err)
		os.Exit(2)
	}
}
