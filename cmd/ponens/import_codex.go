package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/codex"
)

func init() { importSubcommands = append(importSubcommands, newImportCodexCommand) }

func newImportCodexCommand() *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "codex [--out FILE | --publish [--url URL]] [--explain] ROLLOUT",
		Short: "Import a Codex CLI session rollout",
		Long: `Read a Codex CLI rollout ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl:
{timestamp, type, payload} lines) and write the events of its run:
run.start from session_meta, then one action per tool call (function_call,
custom_tool_call, local_shell_call) when its output arrives, mapped through
the mapping table (docs/imports.md). An apply_patch becomes one action per
file it touches. A call fails when its output reports a nonzero exit code
or success false. The format changes between Codex versions: lines and
items of other types are counted and skipped, never fatal; --explain says
what each line became.

The events go to stdout as JSON lines, to --out FILE, or with --publish to
the EVENTS stream. Exit 0 on success, 2 when the rollout cannot be read,
3 when --publish cannot reach NATS.`,
		Example: `  ponens import codex examples/imports/codex.jsonl
  ponens import codex --explain --out /dev/null examples/imports/codex.jsonl`,
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
			in, err := os.Open(args[0])
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			defer in.Close()
			events, skipped, err := codex.Import(in, args[0], table, f.explainer(cmd.ErrOrStderr(), args[0]))
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			if f.explain || len(skipped) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d events of run %s; skipped %s\n", args[0], len(events), events[0].RunID, claudecode.SkippedString(skipped))
			}
			return f.emit(cmd, cfg, events)
		},
	}
	f.register(cmd)
	return cmd
}
