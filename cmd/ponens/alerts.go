package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newAlertsCommand) }

// withAlerts loads the configuration, connects as admin, opens the alerts
// bucket and runs do until SIGINT or SIGTERM.
func withAlerts(cmd *cobra.Command, do func(context.Context, *nats.Conn, schema.Subjects, natsjs.KeyValue) error) error {
	name := commandName(cmd)
	cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
	if err != nil {
		return err
	}
	ctx, stop := commandContext(cmd)
	defer stop()
	nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleAdmin, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	sub := streamConfig(cfg.NATS).Subjects()
	kv, err := alert.OpenStore(ctx, js, sub)
	if err != nil {
		return exitWith(exitUnavailable, "%v", err)
	}
	return do(ctx, nc, sub, kv)
}

func urlFlag(cmd *cobra.Command) {
	cmd.Flags().String("url", "", "NATS server URL (nats.url; empty: the embedded server at nats.listen)")
}

func newAlertsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts",
		Short: "Manage alert subscriptions and silences, and follow alerts",
		Long: `Subscriptions say which verdicts (rules as globs, statuses, agents,
projects) go to which channel: a NATS subject under <prefix>.notify., a
signed webhook, or a Slack-compatible incoming webhook. They live in the
<prefix>_alerts JetStream bucket; the alert stage of ` + "`ponens serve`" + ` reads
them for every verdict. Silences suppress matching alerts until they end.

Connects to --url (nats.url), or to a running ` + "`ponens serve`" + ` at
nats.listen, as admin. Exit 0, 2 on bad flags, 3 when NATS cannot be
reached.`,
		Example: `  ponens alerts subscribe oncall --webhook https://hooks.example.com/ponens --secret k3y --rule 'tests_*'
  ponens alerts list --url nats://127.0.0.1:4222`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitWith(exitBadInput, "unknown command %q (see %s --help)", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newAlertsSubscribeCommand(), newAlertsListCommand(), newAlertsDeleteCommand(),
		newAlertsTestCommand(), newAlertsTailCommand(), newAlertsSilenceCommand())
	return cmd
}

func newAlertsSubscribeCommand() *cobra.Command {
	var s alert.Subscription
	var statuses []string
	cmd := &cobra.Command{
		Use:   "subscribe ID (--subject S | --webhook URL | --slack URL | --stream) [--rule GLOB]... [--status S]... [--agent A]... [--project P]... [--min-severity S] [--secret K] [--group-wait D [--group-interval D] [--repeat-interval D]] [--rate-limit N [--rate-period D]]",
		Short: "Store (or replace) a subscription",
		Long: `Store the subscription ID. Without --status it is told of violations
only. A webhook is POSTed the alert as JSON with the headers
X-Ponens-Delivery (the verdict's identity), X-Ponens-Timestamp and, with
--secret, X-Ponens-Signature: "sha256=" and the hex HMAC-SHA256 of
"<timestamp>.<body>". Exit 0, 2 on a bad subscription, 3 when NATS cannot
be reached.`,
		Example: `  ponens alerts subscribe oncall --webhook https://hooks.example.com/ponens --secret k3y --rule 'tests_*'
  ponens alerts subscribe team --slack https://hooks.slack.com/services/T/B/X --status violated --status unresolved
  ponens alerts subscribe bus --subject ponens.notify.team --agent claude-code --min-severity error
  ponens alerts subscribe digest --webhook https://hooks.example.com/digest --group-wait 30s --group-interval 5m --repeat-interval 4h
  ponens alerts subscribe capped --slack https://hooks.slack.com/services/T/B/X --rate-limit 10 --rate-period 1m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s.ID = args[0]
			for _, st := range statuses {
				s.Statuses = append(s.Statuses, schema.VerdictStatus(st))
			}
			if err := s.Validate(); err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			return withAlerts(cmd, func(ctx context.Context, _ *nats.Conn, sub schema.Subjects, kv natsjs.KeyValue) error {
				if err := s.ValidateFor(sub); err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				if err := alert.PutSubscription(ctx, kv, s); err != nil {
					return exitWith(exitUnavailable, "%v", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "subscription %s stored\n", s.ID)
				return nil
			})
		},
	}
	urlFlag(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&s.Rules, "rule", nil, "a glob on rule ids (repeatable; none: every rule)")
	f.StringArrayVar(&statuses, "status", nil, "violated, pending or unresolved (repeatable; default violated)")
	f.StringArrayVar(&s.Agents, "agent", nil, "only this agent (repeatable)")
	f.StringArrayVar(&s.Projects, "project", nil, "only this project (repeatable)")
	f.StringVar(&s.MinSeverity, "min-severity", "", "only rules declared at least this `SEVERITY`: info, warning, error or critical")
	f.StringVar(&s.Subject, "subject", "", "publish alerts on this NATS subject")
	f.BoolVar(&s.Stream, "stream", false, "send alerts to the query service's stream GET /v1/subscriptions/ID/stream")
	f.StringVar(&s.Webhook, "webhook", "", "POST alerts to this URL")
	f.StringVar(&s.Slack, "slack", "", "POST alerts to this Slack-compatible incoming webhook")
	f.StringVar(&s.Secret, "secret", "", "the HMAC key webhooks are signed with")
	f.DurationVar((*time.Duration)(&s.GroupWait), "group-wait", 0, "group each rule's alerts: first notification this long after the first alert, with the count")
	f.DurationVar((*time.Duration)(&s.GroupInterval), "group-interval", 0, "then at most one notification this often (default --group-wait)")
	f.DurationVar((*time.Duration)(&s.RepeatInterval), "repeat-interval", 0, "with --group-wait: notify a group without new alerts again this long after its last notification, until silenced")
	f.IntVar(&s.RateLimit, "rate-limit", 0, "send at most `N` notifications per --rate-period (alerts over it are kept as rate-limited; groups wait)")
	f.DurationVar((*time.Duration)(&s.RatePeriod), "rate-period", 0, "the period of --rate-limit (default 1m)")
	return cmd
}

func newAlertsListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list [--url URL]",
		Short:   "List the subscriptions with their last delivery, and the silences",
		Long:    `Print each subscription as JSON with its last delivery status, then each silence. Exit 0, 3 when NATS cannot be reached.`,
		Example: `  ponens alerts list --url nats://127.0.0.1:4222`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAlerts(cmd, func(ctx context.Context, _ *nats.Conn, _ schema.Subjects, kv natsjs.KeyValue) error {
				subs, err := alert.Subscriptions(ctx, kv)
				if err != nil {
					return exitWith(exitUnavailable, "%v", err)
				}
				sil, err := alert.Silences(ctx, kv)
				if err != nil {
					return exitWith(exitUnavailable, "%v", err)
				}
				out := cmd.OutOrStdout()
				for _, s := range subs {
					var st json.RawMessage = []byte("null")
					if e, err := kv.Get(ctx, "status."+s.ID); err == nil {
						st = e.Value()
					}
					s.Secret = strings.Repeat("*", min(len(s.Secret), 4))
					b, _ := json.Marshal(s)
					fmt.Fprintf(out, "subscription %s last %s\n", b, st)
				}
				for _, s := range sil {
					b, _ := json.Marshal(s)
					fmt.Fprintf(out, "silence %s\n", b)
				}
				return nil
			})
		},
	}
	urlFlag(cmd)
	return cmd
}

func newAlertsDeleteCommand() *cobra.Command {
	var silence bool
	cmd := &cobra.Command{
		Use:   "delete ID [--silence]",
		Short: "Delete a subscription (or, with --silence, a silence)",
		Long:  `Delete the subscription ID, or the silence ID with --silence. Exit 0, 2 when there is none, 3 when NATS cannot be reached.`,
		Example: `  ponens alerts delete oncall
  ponens alerts delete deploy-window --silence`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := "sub." + args[0]
			if silence {
				key = "silence." + args[0]
			}
			return withAlerts(cmd, func(ctx context.Context, _ *nats.Conn, _ schema.Subjects, kv natsjs.KeyValue) error {
				if err := alert.Delete(ctx, kv, key); errors.Is(err, natsjs.ErrKeyNotFound) {
					return exitWith(exitBadInput, "%s: not stored", key)
				} else if err != nil {
					return exitWith(exitUnavailable, "%v", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s deleted\n", key)
				return nil
			})
		},
	}
	urlFlag(cmd)
	cmd.Flags().BoolVar(&silence, "silence", false, "delete the silence ID")
	return cmd
}

func newAlertsTestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "test ID",
		Short:   "Send a test alert (rule ponens.test) to a subscription's channel",
		Long:    `Deliver a test alert to subscription ID, with its retries, and print the outcome. Exit 0 when delivered, 2 when there is no such subscription, 3 when it could not be delivered.`,
		Example: `  ponens alerts test oncall`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAlerts(cmd, func(ctx context.Context, nc *nats.Conn, sub schema.Subjects, kv natsjs.KeyValue) error {
				n := alert.NewNotifier(nc, kv)
				n.Subjects = sub
				st, err := n.Test(ctx, args[0])
				if err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				b, _ := json.Marshal(st)
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
				if st.Error != "" {
					return exitWith(exitUnavailable, "delivery failed after %d attempts: %s", st.Attempts, st.Error)
				}
				return nil
			})
		},
	}
	urlFlag(cmd)
	return cmd
}

func newAlertsTailCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tail [--url URL]",
		Short:   "Print each alert as the alert stage announces it, until interrupted",
		Long:    `Subscribe to <prefix>.alerts.> and print each alert as one JSON line until SIGINT or SIGTERM. Exit 0 when stopped, 3 when NATS cannot be reached.`,
		Example: `  ponens alerts tail --url nats://127.0.0.1:4222`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAlerts(cmd, func(ctx context.Context, nc *nats.Conn, sub schema.Subjects, _ natsjs.KeyValue) error {
				out := cmd.OutOrStdout()
				s, err := nc.Subscribe(sub.Prefix+".alerts.>", func(m *nats.Msg) { fmt.Fprintf(out, "%s\n", m.Data) })
				if err != nil {
					return exitWith(exitUnavailable, "%v", err)
				}
				defer s.Unsubscribe()
				<-ctx.Done()
				return nil
			})
		},
	}
	urlFlag(cmd)
	return cmd
}

func newAlertsSilenceCommand() *cobra.Command {
	var s alert.Silence
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "silence ID --for D [--rule GLOB] [--agent A] [--run R]",
		Short: "Suppress the alerts that match, for a while",
		Long:  `Store the silence ID: alerts whose rule matches --rule (a glob), agent is --agent and run is --run (empty flags match anything) are not sent until --for has passed. Exit 0, 2 on bad flags, 3 when NATS cannot be reached.`,
		Example: `  ponens alerts silence deploy-window --for 2h --rule 'tests_*'
  ponens alerts silence noisy-run --for 30m --run run-42`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dur <= 0 {
				return exitWith(exitBadInput, "--for must be positive, got %s", dur)
			}
			s.ID, s.Ends = args[0], time.Now().Add(dur).UTC()
			return withAlerts(cmd, func(ctx context.Context, _ *nats.Conn, _ schema.Subjects, kv natsjs.KeyValue) error {
				if err := alert.PutSilence(ctx, kv, s); err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "silence %s until %s\n", s.ID, s.Ends.Format(time.RFC3339))
				return nil
			})
		},
	}
	urlFlag(cmd)
	f := cmd.Flags()
	f.DurationVar(&dur, "for", 0, "how long the silence lasts (such as 2h)")
	f.StringVar(&s.Rule, "rule", "", "a glob on rule ids")
	f.StringVar(&s.Agent, "agent", "", "only this agent")
	f.StringVar(&s.Run, "run", "", "only this run")
	return cmd
}
