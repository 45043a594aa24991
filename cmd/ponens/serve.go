package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/ponens/ponens/ingest/jetstream"
	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
)

func init() {
	subcommands = append(subcommands, newServeCommand, newWorkerCommand, newDemoCommand)
}

// pipeline is what serve, worker and demo share: the NATS settings.
type pipeline struct {
	url        string
	prefix     string
	partitions int
	storeDir   string
	listen     string
}

func (p *pipeline) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.url, "url", "", "NATS URL of the cluster (serve: empty runs an embedded server)")
	cmd.Flags().StringVar(&p.prefix, "prefix", schema.DefaultPrefix, "subject and stream prefix")
	cmd.Flags().IntVar(&p.partitions, "partitions", 16, "partitions of the events stream (fixed when the stream is created)")
	cmd.Flags().StringVar(&p.storeDir, "data", "data/nats", "embedded server: JetStream storage directory")
	cmd.Flags().StringVar(&p.listen, "listen", "127.0.0.1:4222", "embedded server: client address")
}

func (p *pipeline) subjects() schema.Subjects {
	return schema.Subjects{Prefix: p.prefix, Partitions: p.partitions}
}

// connect connects to url and provisions the streams.
func (p *pipeline) connect(ctx context.Context, url string) (*nats.Conn, natsjs.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name("ponens"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("connect %s: %w", url, err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	if err := jetstream.Provision(ctx, js, jetstream.StreamConfig{Prefix: p.prefix, Partitions: p.partitions, Duplicates: 10 * time.Minute}); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func workerOptions(id string, sub schema.Subjects, set *ruleset.Set, js natsjs.JetStream, log *slog.Logger) worker.Options {
	dl := jetstream.NewDeadLetters(js, sub)
	return worker.Options{ID: id, Subjects: sub, Rules: set, Logger: log,
		DeadLetter: func(ctx context.Context, reason string, err error, payload []byte) error {
			return dl.Send(ctx, reason, "worker", err, payload)
		}}
}

func loadRules(cmd *cobra.Command, rf *ruleFlags) (*ruleset.Set, error) {
	cfg, err := loadConfig(cmd, nil)
	if err != nil {
		return nil, err
	}
	return rf.load(cfg.Rules.HighStakesPaths, cfg.Rules.Enforce)
}

func newServeCommand() *cobra.Command {
	var (
		p       pipeline
		rf      ruleFlags
		workers int
		demo    bool
		demoCfg fleet.Config
	)
	cmd := &cobra.Command{
		Use:   "serve --rules PATH... [--workers N] [--demo]",
		Short: "Run the whole pipeline in one process: embedded NATS JetStream, monitor workers, alerts",
		Long: `Run every part in one process on the embedded defaults: an embedded NATS
server with JetStream storing under --data, the streams, --workers monitor
workers sharing the partitions, and the alert stage. With --url it joins
an existing NATS cluster instead of embedding one. With --demo it also
publishes a synthetic fleet of agents and prints what the monitor made of
it. Stops cleanly on SIGINT or SIGTERM.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			set, err := loadRules(cmd, &rf)
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			out := cmd.OutOrStdout()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			url := p.url
			if url == "" {
				srv, err := jetstream.StartEmbedded(jetstream.EmbeddedOptions{Listen: p.listen, StoreDir: filepath.Clean(p.storeDir), Name: "ponens"})
				if err != nil {
					return exitWith(exitBadInput, "ponens: %v", err)
				}
				defer srv.Shutdown()
				url = srv.ClientURL()
				fmt.Fprintf(out, "nats      %s (embedded, JetStream in %s)\n", url, p.storeDir)
			}
			nc, js, err := p.connect(ctx, url)
			if err != nil {
				return exitWith(exitBadInput, "ponens: %v", err)
			}
			defer nc.Close()
			sub := p.subjects()
			fmt.Fprintf(out, "events    publish on %s.events.<runId>, %d partitions\n", sub.Prefix, sub.Partitions)
			fmt.Fprintf(out, "verdicts  stream %s (%s)\n", schema.StreamVerdicts, sub.VerdictsIn())
			fmt.Fprintf(out, "alerts    %s.alerts.<rule>\n", sub.Prefix)
			fmt.Fprintf(out, "decide    request %s.decide.<partition>\n", sub.Prefix)
			fmt.Fprintf(out, "rules     %d loaded\n", len(set.Rules))
			g, gctx := errgroup.WithContext(ctx)
			host, _ := os.Hostname()
			for i := range workers {
				w, err := worker.New(nc, js, workerOptions(fmt.Sprintf("%s-%d-%d", host, os.Getpid(), i), sub, set, js, log))
				if err != nil {
					return err
				}
				g.Go(func() error { return w.Run(gctx) })
			}
			g.Go(func() error { return alert.New(nc, js, sub, sub.Prefix+"-alerts").Run(gctx) })
			if demo {
				g.Go(func() error { return runDemo(gctx, out, nc, js, sub, demoCfg, 0) })
			}
			err = g.Wait()
			fmt.Fprintln(out, "stopped")
			return err
		},
	}
	p.register(cmd)
	rf.register(cmd)
	cmd.Flags().IntVar(&workers, "workers", 2, "monitor workers in this process")
	cmd.Flags().BoolVar(&demo, "demo", false, "publish a synthetic fleet of agents and report on it")
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
		p  pipeline
		rf ruleFlags
		id string
	)
	cmd := &cobra.Command{
		Use:   "worker --url NATS --rules PATH... [--name NAME]",
		Short: "Run one monitor worker against a NATS cluster",
		Long: `Run one monitor worker: it joins the workers sharing the partitions of
the events stream, takes the partitions rendezvous hashing gives it, and
processes them until SIGINT or SIGTERM, when it checkpoints and hands them
back.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.url == "" {
				return exitWith(exitBadInput, "ponens: worker needs --url")
			}
			set, err := loadRules(cmd, &rf)
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			nc, js, err := p.connect(ctx, p.url)
			if err != nil {
				return exitWith(exitBadInput, "ponens: %v", err)
			}
			defer nc.Close()
			if id == "" {
				host, _ := os.Hostname()
				id = fmt.Sprintf("%s-%d", host, os.Getpid())
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			w, err := worker.New(nc, js, workerOptions(id, p.subjects(), set, js, log))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "worker %s on %s\n", id, p.url)
			return w.Run(ctx)
		},
	}
	p.register(cmd)
	rf.register(cmd)
	cmd.Flags().StringVar(&id, "name", "", "worker name, unique among the live workers (default host-pid)")
	return cmd
}

func newDemoCommand() *cobra.Command {
	var (
		p    pipeline
		c    fleet.Config
		rate float64
	)
	cmd := &cobra.Command{
		Use:   "demo --url NATS [--agents N] [--runs N] [--rate R] [--violations F]",
		Short: "Publish a synthetic fleet of agents to a running ponens",
		Long: `Publish a synthetic fleet of coding agents (compliant runs and runs that
read nothing before editing, commit untested, write .env or vanish) with the
Go client, at --rate events per second (0: as fast as acknowledged), then
report the verdicts and alerts the running service produced.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			url := p.url
			if url == "" {
				url = "nats://" + p.listen
			}
			ctx, stop := signalContext()
			defer stop()
			nc, js, err := p.connect(ctx, url)
			if err != nil {
				return exitWith(exitBadInput, "ponens: %v", err)
			}
			defer nc.Close()
			return runDemo(ctx, cmd.OutOrStdout(), nc, js, p.subjects(), c, rate)
		},
	}
	p.register(cmd)
	registerFleet(cmd, &c)
	cmd.Flags().Float64Var(&rate, "rate", 0, "events per second (0: unlimited)")
	return cmd
}

// runDemo publishes the fleet, then watches verdicts and alerts until they
// stop arriving, and prints a report.
func runDemo(ctx context.Context, out io.Writer, nc *nats.Conn, js natsjs.JetStream, sub schema.Subjects, c fleet.Config, rate float64) error {
	runs := fleet.Generate(c)
	events := fleet.Interleave(runs, c.Seed)
	var mu sync.Mutex
	statuses := map[string]int{}
	alerts := map[string]int{}
	last := time.Now()
	vsub, err := nc.Subscribe(sub.Prefix+".verdicts.>", func(m *nats.Msg) {
		var v schema.VerdictEvent
		if json.Unmarshal(m.Data, &v) == nil {
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
		if json.Unmarshal(m.Data, &a) == nil {
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
	pub := jetstream.NewPublisher(js, sub, jetstream.PublisherOptions{})
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
	if err := pub.Flush(ctx); err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(out, "demo      published %d events of %d runs (%d agents) in %s\n", len(events), len(runs), c.Agents, elapsed.Round(time.Millisecond))
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
	fmt.Fprintf(out, "verdicts  %d satisfied, %d pending, %d violated, %d unresolved\n",
		statuses["satisfied"], statuses["pending"], statuses["violated"], statuses["unresolved"])
	for rule, n := range alerts {
		fmt.Fprintf(out, "alert     %-36s %d\n", rule, n)
	}
	return nil
}
