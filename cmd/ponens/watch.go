package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/codex"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/ingest/watch"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newWatchCommand) }

func newWatchCommand() *cobra.Command {
	cmd := groupCommand("watch", "Follow live agent sessions on disk and publish their events")
	cmd.Example = `  ponens watch claude-code --url nats://127.0.0.1:4222
  ponens watch codex --url nats://127.0.0.1:4222`
	cmd.AddCommand(newWatchAgentCommand("claude-code", "Claude Code transcripts", "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects",
		claudecode.ProjectsDir, func(t *mapping.Table, p string) watch.Importer { return claudecode.NewImporter(t, p) }))
	cmd.AddCommand(newWatchAgentCommand("codex", "Codex CLI rollouts", "$CODEX_HOME/sessions, else ~/.codex/sessions",
		codexSessions, func(t *mapping.Table, p string) watch.Importer { return codex.NewImporter(t, p) }))
	return cmd
}

// codexSessions is where Codex CLI writes its rollouts.
func codexSessions() (string, error) {
	if d := os.Getenv("CODEX_HOME"); d != "" {
		return filepath.Join(d, "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".codex", "sessions"), nil
}

func newWatchAgentCommand(name, what, where string, defaultDir func() (string, error), newImporter func(*mapping.Table, string) watch.Importer) *cobra.Command {
	var state string
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   name + " [--url URL] [--state FILE] [--interval DURATION] [DIR]",
		Short: "Publish the events of " + what + " as they are written",
		Long: `Follow the ` + what + ` under DIR (default ` + where + `), every
*.jsonl file at any depth, and publish the events of each session to the
EVENTS stream as its lines are written: one run per session, mapped as
ponens import ` + name + ` maps it. Each event is published once and in
order, across restarts: --state (default
$XDG_STATE_HOME/ponens/watch-` + name + `.json) records how far each
session was published. Runs until interrupted.

Exit 0 when interrupted, 2 on bad input, 3 when NATS cannot be reached.`,
		Example: `  ponens watch ` + name + ` --url nats://127.0.0.1:4222`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
			if err != nil {
				return err
			}
			table, err := loadMapping(cfg.Mapping)
			if err != nil {
				return err
			}
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			} else if dir, err = defaultDir(); err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				return exitWith(exitBadInput, "%s: expected a directory of sessions", dir)
			}
			if state == "" {
				if state, err = watchStateFile(name); err != nil {
					return exitWith(exitBadInput, "--state: %v", err)
				}
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleAgent, cmd.CommandPath())
			if err != nil {
				return err
			}
			defer nc.Close()
			pub := transport.NewPublisher(js, streamConfig(cfg.NATS).Subjects(), transport.PublisherOptions{})
			defer pub.Close()
			w, err := watch.New(watch.Options{
				Dir: dir, State: state, Interval: interval, Logger: newLogger(cmd, cfg.Log.Level),
				New:     func(p string) watch.Importer { return newImporter(table, p) },
				Publish: publishFunc(pub),
			})
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "watching %s, publishing to %s (state %s)\n", dir, natsURL(cfg.NATS), state)
			return w.Run(ctx)
		},
	}
	cmd.Flags().String("url", "", "NATS server URL (nats.url; empty: the embedded server at nats.listen)")
	cmd.Flags().StringVar(&state, "state", "", "keep how far each session was published in this `FILE`")
	cmd.Flags().DurationVar(&interval, "interval", 250*time.Millisecond, "look for new lines this often")
	return cmd
}

// watchStateFile is the default state file of `ponens watch name`.
func watchStateFile(name string) (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "ponens", "watch-"+name+".json"), nil
}

// publishFunc publishes a batch and reports the first failure.
func publishFunc(pub *transport.Publisher) func(context.Context, []schema.Event) error {
	return func(ctx context.Context, evs []schema.Event) error {
		ptrs := make([]*schema.Event, len(evs))
		for i := range evs {
			ptrs[i] = &evs[i]
		}
		for i, err := range pub.PublishBatch(ctx, ptrs) {
			if err != nil {
				return fmt.Errorf("run %s seq %d: %w", evs[i].RunID, evs[i].Seq, err)
			}
		}
		return nil
	}
}
