package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newSinkCommand) }

// storeFlags are the store settings the commands that write it take.
var storeFlags = map[string]string{"store": "store.path", "lib": "store.lib"}

func registerStore(cmd *cobra.Command) {
	cmd.Flags().String("store", "", "the store's data `DIR` (store.path; default data/store)")
	cmd.Flags().String("lib", "", "the `FILE` libchdb.so (store.lib; default where make deps installs it)")
}

func newSinkCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sink [--url URL] [--store DIR]",
		Short: "Store the verdicts and events streams in the embedded store, for ponens sql",
		Long: `sink reads the VERDICTS and EVENTS streams, each on its own durable consumer,
and writes them into the embedded store (store.path) in batches of up to
store.batch_rows messages, waiting at most store.flush_every for a batch to
fill. A batch is acknowledged only once the store committed it: a crash in
between delivers it again, and its rows replace themselves instead of
adding up. ponens serve runs the same sink itself; run this one beside a
cluster of workers. Connects to nats.url (--url), or to a running
` + "`ponens serve --no-store`" + ` at nats.listen. Stops on SIGINT or SIGTERM.

The embedded engine is a shared library installed by ` + "`make deps`" + `; without it
sink says how to install it and exits 3, as it does when the store is in
use by another process.`,
		Example: `  ponens sink --url nats://127.0.0.1:4222 --store data/store`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			binds := maps.Clone(natsFlags)
			maps.Copy(binds, storeFlags)
			cfg, err := loadConfig(cmd, binds)
			if err != nil {
				return err
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			log := newLogger(cmd, cfg.Log.Level)
			setMemoryLimit(cfg.Runtime, log)
			st, closeStore, err := openStore(cfg.Store)
			if errors.Is(err, errDSN) {
				return exitWith(exitBadInput, "%v", err)
			}
			if err != nil {
				return exitWith(exitUnavailable, "store %s: %v", cfg.Store.Path, err)
			}
			defer closeStore()
			nc, js, err := openStreamsPatiently(ctx, cfg.NATS, transport.RoleSink, "ponens sink", log)
			if err != nil {
				return err
			}
			defer nc.Close()
			out := cmd.OutOrStdout()
			var m *sink.Metrics
			if addr, _ := cmd.Flags().GetString("metrics"); addr != "" {
				if m, err = serveMetrics(ctx, addr, log); err != nil {
					return exitWith(exitBadInput, "--metrics: %v", err)
				}
				fmt.Fprintf(out, "metrics   http://%s/metrics\n", addr)
			}
			return orExit(exitUnavailable, runSink(ctx, cfg, js, st, m, log, out))
		},
	}
	registerNATS(cmd, false)
	registerStore(cmd)
	cmd.Flags().String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (rows, batches, skipped, retries, batch sizes, commit time, lag)")
	return cmd
}

// errDSN is openStore's refusal of store.dsn.
var errDSN = errors.New("store.dsn: storing into a ClickHouse server is not available yet; unset store.dsn (PONENS_STORE_DSN) to use the embedded store")

// openStore opens and migrates the embedded store of c.
func openStore(c config.StoreConfig) (*chdb.Store, func(), error) {
	if c.DSN != "" {
		return nil, nil, errDSN
	}
	e, err := chdb.Open(chdb.Options{Lib: c.Lib, Path: c.Path})
	if err != nil {
		return nil, nil, err
	}
	if _, err := chdb.Migrate(e); err != nil {
		e.Close()
		return nil, nil, err
	}
	return chdb.NewStore(e), func() { e.Close() }, nil
}

// serveMetrics serves the sink's metrics, and the Go runtime's and the
// process's, at addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, log *slog.Logger) (*sink.Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := sink.NewMetrics(reg)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics: the server stopped", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() { srv.Close() })
	return m, nil
}

// runSink stores the streams into st until ctx ends.
func runSink(ctx context.Context, cfg config.Config, js natsjs.JetStream, st sink.Appendable, m *sink.Metrics, log *slog.Logger, out io.Writer) error {
	sub := subjectsOf(cfg)
	fmt.Fprintf(out, "store     %s (embedded), from streams %s and %s in batches of up to %d rows\n", cfg.Store.Path, "VERDICTS", "EVENTS", cfg.Store.BatchRows)
	err := sink.FromStreams(ctx, js, sub, st, sink.Options{BatchRows: cfg.Store.BatchRows, FlushEvery: cfg.Store.FlushEvery, AckWait: cfg.Store.AckWait, Logger: log, Metrics: m})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
