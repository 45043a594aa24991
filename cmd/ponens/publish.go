package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newPublishCommand) }

func newPublishCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish [--url URL] [--timeout D] TRACE...",
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
some could not be stored (the server unreachable, or refusing them).

--timeout (default 30s) bounds the whole publish, and SIGINT or SIGTERM
stops it at once. Either way, and whenever some event was not
acknowledged, each run with events not acknowledged gets one line on
stderr naming the seqs that were and were not: those may or may not be
stored, and publishing the same files again is safe (within
nats.duplicate_window nothing is stored twice). An event whose run and seq
are stored with other content is a conflicting duplicate: it is named,
sent to the dead letters as conflicting-duplicate, and the exit is 2.`,
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
			runs, release, err := readTraces(files, cfg.Trace, cmd.ErrOrStderr())
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			defer release()
			total := 0
			for _, r := range runs {
				total += len(r.Run.Events)
			}
			timeout, _ := cmd.Flags().GetDuration("timeout")
			if timeout <= 0 {
				return exitWith(exitBadInput, "ponens publish: --timeout must be positive, got %s", timeout)
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleAgent, "ponens publish")
			if err != nil {
				return err
			}
			defer nc.Close()
			pub := transport.NewPublisher(js, streamConfig(cfg.NATS).Subjects(), transport.PublisherOptions{})
			bar := newProgress(cmd.ErrOrStderr(), total, 0, "publishing", "events")
			receipts, sendErr := publishRuns(ctx, pub, runs, bar)
			closeErr := pub.CloseContext(ctx)
			bar.clear()
			st := pub.Stats()
			if n := receipts.Conflicts(); n > 0 {
				return publishConflicts(cmd, receipts, transport.NewDeadLetters(js, streamConfig(cfg.NATS).Subjects()), n)
			}
			if incomplete := receipts.Incomplete(); len(incomplete) > 0 || sendErr != nil || closeErr != nil {
				return publishFailed(ctx, cmd.ErrOrStderr(), timeout, incomplete, firstErr(sendErr, closeErr, receipts.Err()), st, total)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "published %s of %s from %s to %s: %d stored, %d already stored\n",
				plural(total, "event"), plural(len(runs), "run"), plural(len(files), "file"), natsURL(cfg.NATS), st.Stored, st.Duplicates)
			return nil
		},
	}
	cmd.Flags().String("url", "", "NATS server URL (nats.url; empty: the embedded server at nats.listen)")
	cmd.Flags().Duration("timeout", 30*time.Second, "the longest the whole publish may take, waiting for acknowledgements included")
	return cmd
}

// publishRuns publishes every event of runs through pub, each expected in
// the receipts first (so that events never sent count as not
// acknowledged), until one cannot be sent.
func publishRuns(ctx context.Context, pub *transport.Publisher, runs []namedRun, bar *progress) (*transport.Receipts, error) {
	receipts := transport.NewReceipts()
	for _, r := range runs {
		for i := range r.Run.Events {
			receipts.Expect(&r.Run.Events[i])
		}
	}
	for _, r := range runs {
		for i := range r.Run.Events {
			ev := &r.Run.Events[i]
			if err := pub.PublishReport(ctx, ev, receipts.Done(ev)); err != nil {
				return receipts, fmt.Errorf("%s: %w", r.Name, err)
			}
			bar.tick()
		}
	}
	return receipts, nil
}

// publishConflicts names the runs with conflicting duplicates, sends those
// n events to the dead letters and returns the exit (2; 3 when the dead
// letters cannot be stored).
func publishConflicts(cmd *cobra.Command, receipts *transport.Receipts, dl *transport.DeadLetters, n int) error {
	for _, rr := range receipts.Incomplete() {
		fmt.Fprintf(cmd.ErrOrStderr(), "ponens publish: %s\n", rr)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	if err := receipts.DeadLetterConflicts(ctx, dl, schema.SourcePublish); err != nil {
		return exitWith(exitUnavailable, "ponens publish: dead-lettering %d conflicting events: %v", n, err)
	}
	return exitWith(exitBadInput, "ponens publish: %d events have the run and seq of stored events with other content; sent to the dead letters as %s", n, schema.ReasonConflictingDuplicate)
}

// publishFailed reports a publish that did not store every event: each run
// with events not acknowledged on its own line, then the error (exit 3).
func publishFailed(ctx context.Context, stderr io.Writer, timeout time.Duration, incomplete []transport.RunReceipt, err error, st transport.Stats, total int) error {
	for _, rr := range incomplete {
		fmt.Fprintf(stderr, "ponens publish: %s\n", rr)
	}
	why := "stopped"
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		why = fmt.Sprintf("timed out after %s (--timeout)", timeout)
	case ctx.Err() != nil:
		why = "interrupted"
	case err != nil:
		why = err.Error()
	}
	return exitWith(exitUnavailable, "ponens publish: %s: %d of %d events acknowledged, %d runs incomplete; publishing the same files again is safe",
		why, st.Stored+st.Duplicates, total, len(incomplete))
}

// firstErr is the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
