package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/claudecode"
)

func init() { importSubcommands = append(importSubcommands, newImportClaudeCodeCommand) }

func newImportClaudeCodeCommand() *cobra.Command {
	var f importFlags
	var latest bool
	cmd := &cobra.Command{
		Use:   "claude-code [--out FILE | --publish [--url URL]] [--explain] (TRANSCRIPT | --latest)",
		Short: "Import a Claude Code session transcript",
		Long: `Read a Claude Code session transcript (the JSON lines Claude Code writes
under ~/.claude/projects/<project>/<session>.jsonl) and write the events
of its run: run.start, then one action per tool call, in the order the
calls completed, mapped through the mapping table (mapping.file, else the
shipped one: see docs/imports.md). A call that never got a result ends
the run without a status. Lines that hold no tool call (prompts, text,
summaries, snapshots) are counted and skipped; --explain says, for each
line, what it became or why it became nothing.

--latest takes the newest transcript of the sessions started in the
current directory ($CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects).

The events go to stdout as JSON lines, to --out FILE, or with --publish to
the EVENTS stream of a running service. Exit 0 on success, 2 when the
transcript cannot be read (with its file, line and column), 3 when
--publish cannot reach NATS.`,
		Example: `  ponens import claude-code examples/imports/claude-code.jsonl
  ponens import claude-code --explain --out /dev/null examples/imports/claude-code.jsonl
  ponens import claude-code --latest --publish --url nats://127.0.0.1:4222`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if latest == (len(args) == 1) {
				return exitWith(exitBadInput, "give one TRANSCRIPT or --latest")
			}
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
			if err != nil {
				return err
			}
			table, err := loadMapping(cfg.Mapping)
			if err != nil {
				return err
			}
			path, err := transcriptPath(args, latest)
			if err != nil {
				return err
			}
			in, err := os.Open(path)
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			defer in.Close()
			events, skipped, err := claudecode.Import(in, path, table, f.explainer(cmd.ErrOrStderr(), path))
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			if f.explain || len(skipped) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d events of run %s; skipped %s\n", path, len(events), events[0].RunID, claudecode.SkippedString(skipped))
			}
			return f.emit(cmd, cfg, events)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&latest, "latest", false, "import the newest session started in the current directory")
	return cmd
}

// transcriptPath is the transcript to read: the argument, or the newest
// session of the current directory.
func transcriptPath(args []string, latest bool) (string, error) {
	if !latest {
		return args[0], nil
	}
	projects, err := claudecode.ProjectsDir()
	if err != nil {
		return "", exitWith(exitBadInput, "--latest: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", exitWith(exitBadInput, "--latest: %v", err)
	}
	p, err := claudecode.Latest(projects, wd)
	if err != nil {
		return "", exitWith(exitBadInput, "--latest: %v", err)
	}
	return p, nil
}
