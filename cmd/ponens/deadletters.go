package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newDeadLettersCommand) }

// deadLetterFlags are the selection and output flags the deadletters
// commands share.
type deadLetterFlags struct {
	since  time.Duration
	reason string
	asJSON bool
}

func (f *deadLetterFlags) register(cmd *cobra.Command, output bool) {
	cmd.Flags().String("url", "", "NATS server URL (nats.url; empty: the embedded server at nats.listen)")
	cmd.Flags().DurationVar(&f.since, "since", 0, "only dead letters stored within this long (such as 1h)")
	cmd.Flags().StringVar(&f.reason, "reason", "", "only dead letters with this reason (such as seq-gap)")
	if output {
		cmd.Flags().BoolVar(&f.asJSON, "json", false, "one JSON object per dead letter, its body included")
	}
}

// filter checks the flags and returns the selection.
func (f *deadLetterFlags) filter(name string) (transport.DeadLetterFilter, error) {
	if f.since < 0 {
		return transport.DeadLetterFilter{}, exitWith(exitBadInput, "%s: --since must not be negative, got %s", name, f.since)
	}
	if f.reason != "" && !transport.ValidReason(f.reason) {
		return transport.DeadLetterFilter{}, exitWith(exitBadInput, "%s: --reason %q is not a reason (lowercase letters, digits and '-', such as %s)", name, f.reason, schema.ReasonSeqGap)
	}
	var filt transport.DeadLetterFilter
	if f.since > 0 {
		filt.Since = time.Now().Add(-f.since)
	}
	filt.Reason = f.reason
	return filt, nil
}

// print writes d as a line of text, or as JSON with its body.
func (f *deadLetterFlags) print(w io.Writer, d transport.DeadLetter) error {
	if f.asJSON {
		type withBody struct {
			transport.DeadLetter
			Body string `json:"body"`
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(withBody{d, string(d.Body)})
	}
	run := "-"
	if d.RunID != "" {
		run = strconv.Quote(d.RunID)
	}
	_, err := fmt.Fprintf(w, "%s  #%d  %-13s  %-7s  run %s  %s\n", d.Time.Format(time.RFC3339), d.Seq, d.Reason, d.Source, run, d.Error)
	return err
}

func newDeadLettersCommand() *cobra.Command {
	var f deadLetterFlags
	cmd := &cobra.Command{
		Use:   "deadletters [--url URL] [--since D] [--reason R] [--json]",
		Short: "List what was refused: the dead letters, with reason, run and error",
		Long: `Print the dead letters stored in the DEADLETTER stream, oldest first: when,
the stream sequence, the reason (malformed, invalid, unknown-type,
too-large, seq-gap, seq-repeat, after-end, conflicting-duplicate), where it
was refused (gateway, worker, publish), the run, and the error with its
line, column and field. --json prints one object per dead letter with the
refused input as "body". ` + "`deadletters tail`" + ` follows new ones;
` + "`deadletters replay`" + ` publishes the refused events again.

Connects to --url (nats.url), or to a running ` + "`ponens serve`" + ` at
nats.listen. Exit 0, 2 on bad flags, 3 when NATS cannot be reached.`,
		Example: `  ponens deadletters
  ponens deadletters --since 1h --reason seq-gap --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDeadLetters(cmd, &f, transport.RoleSink, func(ctx context.Context, sub schema.Subjects, filt transport.DeadLetterFilter, js natsjs.JetStream) error {
				dls, err := transport.ReadDeadLetters(ctx, js, sub, filt)
				if err != nil {
					return exitWith(exitUnavailable, "ponens deadletters: %v", err)
				}
				for _, d := range dls {
					if err := f.print(cmd.OutOrStdout(), d); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	f.register(cmd, true)
	cmd.AddCommand(newDeadLettersTailCommand(), newDeadLettersReplayCommand())
	return cmd
}

func newDeadLettersTailCommand() *cobra.Command {
	var f deadLetterFlags
	cmd := &cobra.Command{
		Use:   "tail [--url URL] [--since D] [--reason R] [--json]",
		Short: "Print the dead letters, then each new one as it is stored, until interrupted",
		Long: `Print the dead letters selected as ` + "`ponens deadletters`" + ` does (none
stored before now unless --since says how far back), then each new one as
it is stored, until SIGINT or SIGTERM. Exit 0 when stopped, 3 when NATS
cannot be reached.`,
		Example: `  ponens deadletters tail --since 10m
  ponens deadletters tail --reason after-end --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDeadLetters(cmd, &f, transport.RoleSink, func(ctx context.Context, sub schema.Subjects, filt transport.DeadLetterFilter, js natsjs.JetStream) error {
				if filt.Since.IsZero() {
					filt.Since = time.Now()
				}
				err := transport.TailDeadLetters(ctx, js, sub, filt, func(d transport.DeadLetter) error { return f.print(cmd.OutOrStdout(), d) })
				return orExit(exitUnavailable, err)
			})
		},
	}
	f.register(cmd, true)
	return cmd
}

func newDeadLettersReplayCommand() *cobra.Command {
	var f deadLetterFlags
	cmd := &cobra.Command{
		Use:   "replay [--url URL] [--since D] [--reason R]",
		Short: "Publish the events of dead letters again, once their cause is fixed",
		Long: `Publish again the event each selected dead letter holds, as ` + "`ponens publish`" + `
would: for refusals whose cause is gone (a build that knows the type, a
gap since filled, a rule set that no longer refuses). An event stored
already within nats.duplicate_window is not stored twice; an input that
still does not decode, or was kept only in part (too large), is named and
not sent. The dead letters stay. Prints one line per dead letter and a
count. Exit 0 when every selected event is stored, 2 when some still do
not decode, 3 when NATS cannot be reached or store them.`,
		Example: `  ponens deadletters replay --reason unknown-type
  ponens deadletters replay --since 1h --reason seq-gap`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDeadLetters(cmd, &f, transport.RoleAdmin, func(ctx context.Context, sub schema.Subjects, filt transport.DeadLetterFilter, js natsjs.JetStream) error {
				pub := transport.NewPublisher(js, sub, transport.PublisherOptions{})
				defer pub.Close()
				results, err := transport.ReplayDeadLetters(ctx, js, sub, filt, pub)
				if err != nil {
					return exitWith(exitUnavailable, "ponens deadletters replay: %v", err)
				}
				return reportReplay(cmd.OutOrStdout(), results, pub.Stats())
			})
		},
	}
	f.register(cmd, false)
	return cmd
}

// reportReplay prints each replayed dead letter's outcome and the count,
// and returns the exit: 2 when some input still does not decode, 3 when
// some event could not be stored.
func reportReplay(w io.Writer, results []transport.ReplayResult, st transport.Stats) error {
	code := exitOK
	for _, r := range results {
		what := "sent"
		if r.Err != nil {
			what = "not sent: " + r.Err.Error()
			if isPub := errors.As(r.Err, new(*transport.PublishError)); !isPub {
				code = exitBadInput
			} else if code == exitOK {
				code = exitUnavailable
			}
		}
		fmt.Fprintf(w, "#%d  %s  run %q  %s\n", r.Seq, r.Reason, r.RunID, what)
	}
	fmt.Fprintf(w, "replayed %d dead letters: %d events stored, %d already stored, %d not sent\n",
		len(results), st.Stored, st.Duplicates, len(results)-int(st.Stored+st.Duplicates))
	if code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// withDeadLetters loads the configuration, checks the flags, connects in
// role (sink to read the dead letters, admin to replay them as events), and
// runs do until SIGINT or SIGTERM.
func withDeadLetters(cmd *cobra.Command, f *deadLetterFlags, role transport.Role, do func(context.Context, schema.Subjects, transport.DeadLetterFilter, natsjs.JetStream) error) error {
	name := commandName(cmd)
	cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
	if err != nil {
		return err
	}
	filt, err := f.filter(name)
	if err != nil {
		return err
	}
	ctx, stop := commandContext(cmd)
	defer stop()
	nc, js, err := openStreams(ctx, cfg.NATS, role, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	return do(ctx, streamConfig(cfg.NATS).Subjects(), filt, js)
}
