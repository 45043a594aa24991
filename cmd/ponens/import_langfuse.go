package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/langfuse"
)

func init() { importSubcommands = append(importSubcommands, newImportLangfuseCommand) }

func newImportLangfuseCommand() *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "langfuse [--out FILE | --publish [--url URL]] [--explain] EXPORT.json",
		Short: "Import Langfuse trace exports",
		Long: `Read a Langfuse export (one trace with its observations, a JSON array of
traces, or an API page {"data": [...]}) and write one run per trace:
run.start, an action per TOOL observation in start-time order (the
observation's name is the tool, its input the arguments, level ERROR a
failed call), a telemetry event per GENERATION, and run.finish (run.error
when the last tool call failed). Observations of other types (SPAN, EVENT,
AGENT, …) are counted and skipped; --explain says what each became.

The events go to stdout as JSON lines, to --out FILE, or with --publish to
the EVENTS stream. Exit 0 on success, 2 when the export cannot be read, 3
when --publish cannot reach NATS.`,
		Example: `  ponens import langfuse examples/imports/langfuse.json
  ponens import langfuse --explain --out /dev/null examples/imports/langfuse.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
			if err != nil {
				return err
			}
			table, err := loadMapping(cfg.Mapping)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			traces, err := langfuse.Decode(data, args[0])
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			var explain func(string, string)
			if f.explain {
				explain = func(where, what string) { fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s: %s\n", args[0], where, what) }
			}
			events, skipped := langfuse.Import(traces, table, explain)
			if f.explain || len(skipped) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s of %s; skipped %s\n", args[0], plural(len(events), "event"), plural(len(traces), "run"), claudecode.SkippedString(skipped))
			}
			return f.emit(cmd, cfg, events)
		},
	}
	f.register(cmd)
	return cmd
}
