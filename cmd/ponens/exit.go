package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// The exit codes of every command: the one contract scripts rely on.
const (
	exitOK          = 0 // all well: every rule satisfied, every file valid, the step allowed
	exitViolated    = 1 // some rule violated (check, eval), or a decision other than allow (decide)
	exitBadInput    = 2 // unreadable input, a bad configuration or a usage error
	exitUnavailable = 3 // a service could not be reached or refused: NATS, JetStream, the store
)

// exitError carries a process exit code out of a cobra RunE. An empty msg
// means the command already printed what the user needs.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d: %s", e.code, e.msg) }

// exitWith returns an error that makes the command exit with code after
// printing msg (report adds the "ponens <command>: " prefix).
func exitWith(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// orExit is err as an exitError: itself when it is one already, else with
// code. nil stays nil.
func orExit(code int, err error) error {
	var ex *exitError
	if err == nil || errors.As(err, &ex) {
		return err
	}
	return &exitError{code: code, msg: err.Error()}
}

// report prints err on stderr, prefixed with the command that failed, and
// returns the exit code: an exitError's code; exitBadInput for any other
// error, which is cobra's (an unknown flag or command, wrong arguments).
func report(stderr io.Writer, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	code, msg := exitBadInput, err.Error()
	var ex *exitError
	if errors.As(err, &ex) {
		code, msg = ex.code, ex.msg
	}
	if msg != "" {
		fmt.Fprintln(stderr, prefixed(commandName(cmd), msg))
	}
	return code
}

// commandName is the command as typed, without flags: "ponens policy validate".
func commandName(cmd *cobra.Command) string {
	if cmd == nil {
		return "ponens"
	}
	return cmd.CommandPath()
}

// prefixed starts msg with "<name>: " unless it names a ponens command
// already; a bare "ponens: " becomes name's.
func prefixed(name, msg string) string {
	switch {
	case strings.HasPrefix(msg, "ponens: "):
		return name + ": " + strings.TrimPrefix(msg, "ponens: ")
	case strings.HasPrefix(msg, "ponens "):
		return msg
	}
	return name + ": " + msg
}
