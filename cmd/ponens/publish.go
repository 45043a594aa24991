package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/jetstream"
)

func init() { subcommands = append(subcommands, newPublishCommand) }

func newPublishCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish [--url URL] TRACE...",
		Short: "Replay trace files into the EVENTS stream",
		Long: `Read every trace file, an event stream (JSON lines, one envelope per line)
or a Ponens reference trace (one JSON object); a directory stands for every
*.json and *.jsonl file under it. Publish each of its events
to the EVENTS stream with the Go client, after provisioning the streams.
Every file is read and checked before anything is published. Each event
carries Nats-Msg-Id <runId>:<seq> (the run token in place of a runId that
is not one), so publishing a file again within
nats.duplicate_window stores nothing twice: the count says how many events
were already stored. A terminal gets a progress bar.

Connects to --url (nats.url), or, when it is empty, to the embedded server
of a running ` + "`ponens serve`" + ` at nats.listen. Exit 0 when every event is
stored, 2 on unreadable input or a configuration that does not fit the
existing streams, with a message naming the file, line and field, 3 when
some could not be stored (the server unreachable, or refusing them).`,
		Example: `  ponens publish examples/traces
  ponens publish --url nats://127.0.0.1:4222 examples/traces/fleet.jsonl`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitWith(exitBadInput, "ponens publish: give at least one trace file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
			if err != nil {
				return err
			}
			files, err := traceFiles(args, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return exitWith(exitBadInput, "ponens publish: no trace files")
			}
			runs, err := readTraces(files, cfg.Trace.MaxEventBytes)
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			total := 0
			for _, r := range runs {
				total += len(r.Run.Events)
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			nc, js, err := openStreams(ctx, cfg.NATS, jetstream.RoleAgent, "ponens publish")
			if err != nil {
				return err
			}
			defer nc.Close()
			pub := jetstream.NewPublisher(js, streamConfig(cfg.NATS).Subjects(), jetstream.PublisherOptions{})
			bar := newProgress(cmd.ErrOrStderr(), total, 0, "publishing", "events")
			for _, r := range runs {
				for i := range r.Run.Events {
					if err := pub.Publish(ctx, &r.Run.Events[i]); err != nil {
						pub.Close()
						bar.clear()
						return exitWith(exitUnavailable, "ponens publish: %s: %v", r.Name, err)
					}
					bar.tick()
				}
			}
			err = pub.Close()
			bar.clear()
			st := pub.Stats()
			if err != nil {
				return exitWith(exitUnavailable, "ponens publish: %v (%d of %d events stored, %d failed)", err, st.Stored+st.Duplicates, total, st.Failed)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "published %d events of %d runs from %d files to %s: %d stored, %d already stored\n",
				total, len(runs), len(files), natsURL(cfg.NATS), st.Stored, st.Duplicates)
			return nil
		},
	}
	cmd.Flags().String("url", "", "NATS server URL (nats.url; empty: the embedded server at nats.listen)")
	return cmd
}
