package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newQueryCommand, newAlertCommand) }

func newQueryCommand() *cobra.Command {
	var rf ruleFlags
	var withBucket bool
	cmd := &cobra.Command{
		Use:   "query --rules PATH... [--listen ADDR] [--store DIR] [--alerts [--url URL]]",
		Short: "Run the query service alone, over the store",
		Long: `query runs the HTTP query service (docs/query-api.md) over the store,
without the rest of the pipeline: beside a cluster of workers and a sink
that write into a ClickHouse server (store.dsn), or over an embedded store
nothing writes into at the moment (the embedded store is opened by one
process at a time). It listens on query.listen (--listen) and takes the
tokens of query.tokens; --rules are the rules summaries list, as
ponens check lists them. With --alerts it also serves the alert
subscriptions and silences (/v1/subscriptions, /v1/silences) of the
alerts bucket, connecting as admin to --url (nats.url), or to a running
` + "`ponens serve`" + ` at nats.listen. Stops on SIGINT or SIGTERM.`,
		Example: `  ponens query --rules examples/rules --store data/store
  ponens query --rules /etc/ponens/rules --listen 0.0.0.0:8090 --config ponens.yaml
  ponens query --rules examples/rules --store data/store --alerts --url nats://127.0.0.1:4222`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			binds := map[string]string{"listen": "query.listen", "url": "nats.url"}
			maps.Copy(binds, storeFlags)
			cfg, err := loadConfig(cmd, binds)
			if err != nil {
				return err
			}
			set, err := rf.load(cfg.Rules, cfg.Rules.Enforce)
			if err != nil {
				return err
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			log := newLogger(cmd, cfg.Log.Level)
			setMemoryLimit(cfg.Runtime, log)
			if err := storeExists(cfg.Store); err != nil {
				return err
			}
			st, closeStore, err := openStore(cfg.Store)
			if err != nil {
				return storeExit(cfg.Store, err, "")
			}
			defer closeStore()
			var alerts api.Alerts
			var live api.Live
			if withBucket {
				var closeNATS func()
				if alerts, live, closeNATS, err = alertsStore(ctx, cfg); err != nil {
					return err
				}
				defer closeNATS()
			}
			qs, err := queryServer(cfg, set, st.querier, live, alerts, nil)
			if err != nil {
				return err
			}
			addr, err := qs.Listen()
			if err != nil {
				return exitWith(exitBadInput, "ponens query: query.listen (--listen): %v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "query     %s/v1/ over %s, %d rules\n", queryURL(cfg, addr.String()), st.where, len(set.Rules))
			return orExit(exitUnavailable, qs.Run(ctx))
		},
	}
	rf.register(cmd)
	registerStore(cmd)
	cmd.Flags().String("listen", "", "the service's `ADDR` (query.listen, default 127.0.0.1:8090)")
	cmd.Flags().BoolVar(&withBucket, "alerts", false, "serve the alert subscriptions and silences of the alerts bucket, and the live streams (/v1/stream), over NATS")
	cmd.Flags().String("url", "", "with --alerts: NATS server URL (nats.url; empty: the embedded server of a ponens serve at nats.listen)")
	return cmd
}

// alertsStore connects to NATS as admin and opens the alerts bucket, for
// the admin routes of ponens query, and follows the live verdicts and
// stream subscriptions on the same connection; with what closes it.
func alertsStore(ctx context.Context, cfg config.Config) (api.Alerts, api.Live, func(), error) {
	nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleAdmin, "ponens query")
	if err != nil {
		return nil, nil, nil, err
	}
	sub := streamConfig(cfg.NATS).Subjects()
	kv, err := alert.OpenStore(ctx, js, sub)
	if err != nil {
		nc.Close()
		return nil, nil, nil, exitWith(exitUnavailable, "ponens query: %v", err)
	}
	return alert.Store{KV: kv, Subjects: sub}, api.NATSLive{Conn: nc, Subjects: sub}, nc.Close, nil
}

func newAlertCommand() *cobra.Command {
	var dashboardURL string
	cmd := &cobra.Command{
		Use:   "alert [--url URL] [--dashboard-url URL]",
		Short: "Run the alert stage alone against a NATS cluster",
		Long: `alert runs the alert stage by itself: it reads the VERDICTS stream on its
durable consumer (<prefix>-alerts), publishes each violation on
<prefix>.alerts.<rule>, and delivers it to the subscriptions of
` + "`ponens alerts`" + ` (webhooks, Slack, NATS subjects), with their silences,
grouping and retries; its delivery state is kept in JetStream, so a
restart neither loses nor repeats an alert. ponens serve runs the same
stage itself; run this one beside a cluster of workers. Connects to
nats.url (--url), or to a running ` + "`ponens serve`" + ` at nats.listen, in the
alert role. Stops on SIGINT or SIGTERM.`,
		Example: `  ponens alert --url nats://nats-1:4222 --dashboard-url https://ponens.example.com`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, natsFlags)
			if err != nil {
				return err
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			log := newLogger(cmd, cfg.Log.Level)
			setMemoryLimit(cfg.Runtime, log)
			out := cmd.OutOrStdout()
			p, err := pipeline.New(ctx, pipeline.Options{
				NATS:     pipelineNATS(cfg.NATS, transport.RoleAlert, "ponens alert", true, log),
				Subjects: subjectsOf(cfg), Logger: log, Announce: out,
				Alerts: &pipeline.AlertOptions{Notify: true, DashboardURL: dashboardURL},
			})
			if err != nil {
				return pipelineExit("ponens alert", err)
			}
			defer p.Close()
			fmt.Fprintf(out, "alerts    from stream VERDICTS on %s\n", natsURL(cfg.NATS))
			return orExit(exitUnavailable, p.Run(ctx))
		},
	}
	registerNATS(cmd, false)
	cmd.Flags().StringVar(&dashboardURL, "dashboard-url", "", "base URL of the dashboard alerts link to (<url>/runs/<run>)")
	return cmd
}
