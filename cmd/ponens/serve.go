package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() {
	subcommands = append(subcommands, newServeCommand, newWorkerCommand, newDemoCommand)
}

// natsFlags are the NATS settings serve, worker and demo take as flags,
// bound to their configuration keys.
var natsFlags = map[string]string{
	"url": "nats.url", "prefix": "nats.prefix", "partitions": "nats.partitions",
	"data": "nats.store_dir", "listen": "nats.listen",
}

// registerNATS registers the NATS flags of cmd; embedded adds those of the
// embedded server `serve` runs.
func registerNATS(cmd *cobra.Command, embedded bool) {
	if embedded {
		cmd.Flags().String("url", "", "NATS URL of a cluster to join (nats.url; default: run an embedded server)")
		cmd.Flags().String("data", "", "embedded server: JetStream storage directory (nats.store_dir, default data/nats)")
		cmd.Flags().String("listen", "", "embedded server: client address (nats.listen, default 127.0.0.1:4222)")
	} else {
		cmd.Flags().String("url", "", "NATS URL (nats.url; default: a local ponens serve at nats.listen)")
	}
	cmd.Flags().String("prefix", "", "subject and stream prefix (nats.prefix, default ponens)")
	cmd.Flags().Int("partitions", 0, "partitions of the events stream, fixed when it is created (nats.partitions, default "+strconv.Itoa(schema.DefaultPartitions)+")")
}

func subjectsOf(c config.Config) schema.Subjects { return streamConfig(c.NATS).Subjects() }

func newServeCommand() *cobra.Command {
	var (
		rf           ruleFlags
		workers      int
		demo         bool
		dashboardURL string
		demoCfg      fleet.Config
	)
	cmd := &cobra.Command{
		Use:   "serve --rules PATH... [--workers N] [--demo]",
		Short: "Run the whole pipeline in one process: embedded NATS JetStream, ingest gateway, monitor workers, alerts",
		Long: `Run every part in one process on the embedded defaults: an embedded NATS
server with JetStream storing under nats.store_dir (--data), the streams,
the HTTP ingest gateway (gateway.listen, --http), --workers monitor workers
sharing the partitions, the alert stage, and the sink that stores verdicts
and events in the embedded store (store.path, --store), and the query
service with the dashboard over it (query.listen, --query). --no-store runs
neither; so does serve, after saying so, without the engine installed by
make deps. With nats.url (--url) it joins
an existing NATS cluster instead of embedding one. With --demo it also
publishes a synthetic fleet of agents and prints what the monitor made of
it. Stops cleanly on SIGINT or SIGTERM.

The embedded server accepts only the users of nats.server.users, each
limited to its role; with none configured, serve generates an nkey seed per
role under <nats.store_dir>/credentials/<role>.nk, connects each of its
parts in its role, and the other commands run with the same
nats.store_dir pick their role's seed up (docs/security.md).`,
		Example: `  ponens serve --rules examples/rules --demo
  ponens serve --rules examples/rules --data /var/lib/ponens --http 0.0.0.0:8080
  ponens serve --rules examples/rules --url nats://nats-1:4222 --workers 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range []string{"agents", "runs", "steps", "violations", "seed"} {
				if cmd.Flags().Changed(name) && !demo {
					return exitWith(exitBadInput, "--%s shapes the demo fleet: give --demo with it", name)
				}
			}
			if workers < 1 {
				return exitWith(exitBadInput, "--workers: want at least 1 monitor worker, got %d", workers)
			}
			if err := demoCfg.Validate(); demo && err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			binds := maps.Clone(natsFlags)
			binds["http"] = "gateway.listen"
			binds["query"] = "query.listen"
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
			out := cmd.OutOrStdout()
			log := newLogger(cmd, cfg.Log.Level)
			setMemoryLimit(cfg.Runtime, log)
			// Before NATS starts or is waited for: a SIGHUP meanwhile reloads once the workers run.
			rw, err := watchRules(&rf, cfg)
			if err != nil {
				return exitWith(exitBadInput, "ponens serve: %v", err)
			}
			defer rw.close()
			metrics := gateway.NewMetrics() // the gateway's and the sink's, at the gateway's /metrics
			store, querier, closeStore, err := serveStore(cmd, cfg, metrics.Registerer(), log)
			if err != nil {
				return err
			}
			defer closeStore()
			host, _ := os.Hostname()
			var ids []string
			for i := range workers {
				ids = append(ids, fmt.Sprintf("%s-%d-%d", host, os.Getpid(), i))
			}
			sub := subjectsOf(cfg)
			opts := pipeline.Options{
				NATS:     pipelineNATS(cfg.NATS, transport.RoleAdmin, "ponens serve", true, log),
				Subjects: sub, Logger: log, Announce: out,
				Gateway: gatewayOptions(cfg, metrics, log),
				Workers: &pipeline.WorkersOptions{IDs: ids, Worker: workerOptions(cfg, set)},
				Reload:  func(ctx context.Context, ws []*worker.Worker) error { return rw.run(ctx, log, out, ws) },
				Alerts:  &pipeline.AlertOptions{Notify: true, DashboardURL: dashboardURL},
				Sink:    store,
			}
			how := ""
			if cfg.NATS.URL == "" {
				if opts.NATS.Embedded, how, err = embeddedNATS(cfg.NATS, "ponens serve", cfg.NATS.Listen, "ponens", out); err != nil {
					return err
				}
			}
			p, err := pipeline.New(ctx, opts)
			if err != nil {
				return pipelineExit("ponens serve", err)
			}
			defer p.Close()
			if srv := p.Server(); srv != nil {
				fmt.Fprintf(out, "nats      %s (embedded, JetStream in %s; %s)\n", srv.ClientURL(), cfg.NATS.StoreDir, how)
			}
			fmt.Fprintf(out, "events    publish on %s.events.<runId>, %d partitions\n", sub.Prefix, sub.Partitions)
			fmt.Fprintf(out, "verdicts  stream %s (%s)\n", schema.StreamVerdicts, sub.VerdictsIn())
			fmt.Fprintf(out, "alerts    %s.alerts.<rule>; subscriptions in bucket %s (ponens alerts)\n", sub.Prefix, sub.Bucket(schema.BucketAlerts))
			fmt.Fprintf(out, "decide    request %s.decide.<partition>\n", sub.Prefix)
			fmt.Fprintf(out, "rules     %d loaded, %s\n", len(set.Rules), rw.what())
			if querier != nil {
				kv, err := alert.OpenStore(ctx, p.JetStream(), sub)
				if err != nil {
					return exitWith(exitUnavailable, "ponens serve: %v", err)
				}
				qs, err := queryServer(cfg, set, querier, api.NATSLive{Conn: p.Conn(), Subjects: sub}, alert.Store{KV: kv, Subjects: sub}, metrics.Registry())
				if err != nil {
					return err
				}
				if _, err := qs.Listen(); err != nil {
					return exitWith(exitBadInput, "ponens serve: query.listen (--query): %v", err)
				}
				p.Add(pipeline.Actor{Name: "query", Run: qs.Run})
				fmt.Fprintf(out, "query     %s/v1/ (ponens runs, ponens rules; docs/query-api.md)\n", queryURL(cfg, cfg.Query.Listen))
			}
			if demo {
				p.Add(pipeline.Actor{Name: "demo", Run: func(ctx context.Context) error {
					return orExit(exitUnavailable, runDemo(ctx, out, p.Conn(), p.JetStream(), sub, demoCfg, 0))
				}})
			}
			err = p.Run(ctx)
			fmt.Fprintln(out, "stopped")
			return orExit(exitUnavailable, err)
		},
	}
	registerNATS(cmd, true)
	rf.register(cmd)
	cmd.Flags().String("http", "", "ingest gateway address (gateway.listen, default 127.0.0.1:8080)")
	cmd.Flags().IntVar(&workers, "workers", 2, "monitor workers in this process")
	cmd.Flags().BoolVar(&demo, "demo", false, "publish a synthetic fleet of agents and report on it")
	cmd.Flags().String("query", "", "query service `ADDR` (query.listen, default 127.0.0.1:8090)")
	cmd.Flags().StringVar(&dashboardURL, "dashboard-url", "", "base URL of the dashboard alerts link to (<url>/runs/<run>)")
	registerServeStore(cmd)
	registerFleet(cmd, &demoCfg)
	return cmd
}

func registerFleet(cmd *cobra.Command, c *fleet.Config) {
	cmd.Flags().IntVar(&c.Agents, "agents", 10, "demo: agents")
	cmd.Flags().IntVar(&c.RunsPerAgent, "runs", 5, "demo: runs per agent")
	cmd.Flags().IntVar(&c.Steps, "steps", 12, "demo: actions per run (about)")
	cmd.Flags().Float64Var(&c.Violations, "violations", 0.3, "demo: share of runs that break a rule")
	cmd.Flags().Uint64Var(&c.Seed, "seed", 1, "demo: seed")
}

func newWorkerCommand() *cobra.Command {
	var (
		rf   ruleFlags
		name string
	)
	cmd := &cobra.Command{
		Use:   "worker [--url URL] --rules PATH... [--name NAME]",
		Short: "Run one monitor worker against a NATS cluster",
		Long: `Run one monitor worker: it joins the workers sharing the partitions of
the events stream, takes the partitions rendezvous hashing gives it, and
processes them until SIGINT or SIGTERM, when it checkpoints and hands them
back. Connects to nats.url (--url), or to a running ` + "`ponens serve`" + ` at
nats.listen.`,
		Example: `  ponens worker --rules examples/rules
  ponens worker --url nats://nats-1:4222 --rules examples/rules --name worker-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, natsFlags)
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
			rw, err := watchRules(&rf, cfg) // before the wait for NATS: a SIGHUP meanwhile reloads once the worker runs
			if err != nil {
				return exitWith(exitBadInput, "ponens worker: %v", err)
			}
			defer rw.close()
			if name == "" {
				host, _ := os.Hostname()
				name = fmt.Sprintf("%s-%d", host, os.Getpid())
			}
			out := cmd.OutOrStdout()
			p, err := pipeline.New(ctx, pipeline.Options{
				NATS:     pipelineNATS(cfg.NATS, transport.RoleWorker, "ponens worker", true, log),
				Subjects: subjectsOf(cfg), Logger: log, Announce: out,
				Workers: &pipeline.WorkersOptions{IDs: []string{name}, Worker: workerOptions(cfg, set)},
				Reload:  func(ctx context.Context, ws []*worker.Worker) error { return rw.run(ctx, log, out, ws) },
			})
			if err != nil {
				return pipelineExit("ponens worker", err)
			}
			defer p.Close()
			fmt.Fprintf(out, "worker %s on %s, %d rules %s\n", name, natsURL(cfg.NATS), len(set.Rules), rw.what())
			return orExit(exitUnavailable, p.Run(ctx))
		},
	}
	registerNATS(cmd, false)
	rf.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "worker name, unique among the live workers (default host-pid)")
	return cmd
}

func newDemoCommand() *cobra.Command {
	var (
		c    fleet.Config
		rate float64
	)
	cmd := &cobra.Command{
		Use:   "demo [--url URL] [--agents N] [--runs N] [--rate NUMBER] [--violations NUMBER] [--seed N]",
		Short: "Publish a synthetic fleet of agents to a running ponens",
		Long: `Publish a synthetic fleet of coding agents (compliant runs and runs that
read nothing before editing, commit untested, write .env or vanish) with the
Go client, at --rate events per second (0: as fast as acknowledged), then
report the verdicts and alerts the running service produced. Connects to
nats.url (--url), or to a running ` + "`ponens serve`" + ` at nats.listen.`,
		Example: `  ponens demo
  ponens demo --url nats://127.0.0.1:4222 --agents 20 --rate 500 --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.Validate(); err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			if rate < 0 {
				return exitWith(exitBadInput, "--rate: want 0 (unlimited) or more events per second, got %g", rate)
			}
			cfg, err := loadConfig(cmd, natsFlags)
			if err != nil {
				return err
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleAdmin, "ponens demo")
			if err != nil {
				return err
			}
			defer nc.Close()
			return orExit(exitUnavailable, runDemo(ctx, cmd.OutOrStdout(), nc, js, subjectsOf(cfg), c, rate))
		},
	}
	registerNATS(cmd, false)
	registerFleet(cmd, &c)
	cmd.Flags().Float64Var(&rate, "rate", 0, "events per second (0: unlimited)")
	return cmd
}

// runDemo publishes the fleet under run ids of its own (demoRunPrefix), so
// that every demo is judged afresh, then watches the verdicts and alerts of
// its runs until they stop arriving, and prints a report that says what it
// published and where to look.
func runDemo(ctx context.Context, out io.Writer, nc *nats.Conn, js natsjs.JetStream, sub schema.Subjects, c fleet.Config, rate float64) error {
	c.RunPrefix = demoRunPrefix(c.Seed, time.Now())
	c.End = time.Now().UTC().Truncate(time.Millisecond)
	runs := fleet.Generate(c)
	events := fleet.Interleave(runs, c.Seed)
	var mu sync.Mutex
	statuses := map[string]int{}
	alerts := map[string]int{}
	last := time.Now()
	ours := func(runID string) bool { return strings.HasPrefix(runID, c.RunPrefix) }
	vsub, err := nc.Subscribe(sub.Prefix+".verdicts.>", func(m *nats.Msg) {
		var v schema.VerdictEvent
		if json.Unmarshal(m.Data, &v) == nil && ours(v.RunID) {
			mu.Lock()
			statuses[string(v.Status)]++
			last = time.Now()
			mu.Unlock()
		}
	})
	if err != nil {
		return err
	}
	defer vsub.Unsubscribe()
	asub, err := nc.Subscribe(sub.Prefix+".alerts.>", func(m *nats.Msg) {
		var a alert.Alert
		if json.Unmarshal(m.Data, &a) == nil && ours(a.Verdict.RunID) {
			mu.Lock()
			alerts[a.Verdict.Rule.ID]++
			last = time.Now()
			mu.Unlock()
		}
	})
	if err != nil {
		return err
	}
	defer asub.Unsubscribe()
	start := time.Now()
	if err := publishDemo(ctx, js, sub, events, rate); err != nil || ctx.Err() != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(out, "demo      published %d events of %d runs (%d agents, run ids %s*) to %s.events.<runId> in %s\n",
		len(events), len(runs), c.Agents, c.RunPrefix, sub.Prefix, elapsed.Round(time.Millisecond))
	for { // until the monitor has been quiet for a while
		mu.Lock()
		quiet := time.Since(last)
		mu.Unlock()
		if quiet > 2*time.Second {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "verdicts  %d satisfied, %d pending, %d violated, %d unresolved (stream %s, subjects %s)\n",
		statuses["satisfied"], statuses["pending"], statuses["violated"], statuses["unresolved"], schema.StreamVerdicts, sub.VerdictsIn())
	rules := slices.Sorted(maps.Keys(alerts))
	for _, rule := range rules {
		fmt.Fprintf(out, "alert     %-36s %d\n", rule, alerts[rule])
	}
	fmt.Fprintf(out, "look      alerts on %s.alerts.<rule>; %s\n", sub.Prefix, demoDecideHint(runs, c.RunPrefix, nc.ConnectedUrl()))
	return nil
}

// demoDecideHint says how to ask the service about a step: of the last run
// still open, or, when every run of the demo has ended (no step can follow
// one), of a new run.
func demoDecideHint(runs []fleet.Run, prefix, url string) string {
	for i := len(runs) - 1; i >= 0; i-- {
		if evs := runs[i].Events; len(evs) > 0 && !evs[len(evs)-1].Type.IsTerminal() {
			return fmt.Sprintf("ask about a run: ponens decide --run %s --url %s INTENT.json", runs[i].ID, url)
		}
	}
	return fmt.Sprintf("the demo's runs have ended; ask about a step of a new run: ponens decide --run %snext --new-run --url %s INTENT.json", prefix, url)
}

// demoRunPrefix starts the run ids of a demo: the seed and the start time,
// so that no two demos share a run (a run that ended takes no more events).
func demoRunPrefix(seed uint64, now time.Time) string {
	return fmt.Sprintf("demo-%d-%s-", seed, strconv.FormatInt(now.UnixMilli(), 36))
}

// publishDemo publishes events at rate events per second (0: as fast as
// they are acknowledged).
func publishDemo(ctx context.Context, js natsjs.JetStream, sub schema.Subjects, events []*schema.Event, rate float64) error {
	pub := transport.NewPublisher(js, sub, transport.PublisherOptions{})
	defer pub.Close()
	start := time.Now()
	for i, ev := range events {
		if rate > 0 {
			if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return nil
				}
			}
		}
		if err := pub.Publish(ctx, ev); err != nil {
			return err
		}
	}
	return pub.Flush(ctx)
}

// loadRules loads the rules of rf with the configured high-stakes paths and
// enforce switch.
func loadRules(cmd *cobra.Command, rf *ruleFlags) (*ruleset.Set, error) {
	cfg, err := loadConfig(cmd, nil)
	if err != nil {
		return nil, err
	}
	return rf.load(cfg.Rules, cfg.Rules.Enforce)
}
