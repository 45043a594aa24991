package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/sink/clickhouse"
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
		Short: "Store the verdicts and events streams in the store, for ponens sql",
		Long: `sink reads the VERDICTS and EVENTS streams, each on its own durable consumer,
and writes them into the store in batches of up to
store.batch_rows messages, waiting at most store.flush_every for a batch to
fill. A batch is acknowledged only once the store committed it: a crash in
between delivers it again, and its rows replace themselves instead of
adding up. ponens serve runs the same sink itself; run this one beside a
cluster of workers. Connects to nats.url (--url), or to a running
` + "`ponens serve --no-store`" + ` at nats.listen. Stops on SIGINT or SIGTERM.

The store is the embedded ClickHouse engine on store.path (--store), or the
ClickHouse server that store.dsn (PONENS_STORE_DSN) names. The embedded
engine is a shared library installed by ` + "`make deps`" + `; without it sink says
how to install it and exits 3, as it does when the store is in use by
another process or the server does not answer; a store.dsn that names no
server exits 2.`,
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
			if err != nil {
				return storeExit(cfg.Store, err, "")
			}
			defer closeStore()
			out := cmd.OutOrStdout()
			var m *sink.Metrics
			var extra []pipeline.Actor
			if addr, _ := cmd.Flags().GetString("metrics"); addr != "" {
				reg := prometheus.NewRegistry()
				reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
				m = sink.NewMetrics(reg)
				a, _, err := pipeline.MetricsServer("--metrics", addr, reg)
				if err != nil {
					return exitWith(exitBadInput, "%v", err)
				}
				extra = append(extra, a)
				fmt.Fprintf(out, "metrics   http://%s/metrics\n", addr)
			}
			p, err := pipeline.New(ctx, pipeline.Options{
				NATS:     pipelineNATS(cfg.NATS, transport.RoleSink, "ponens sink", true, log),
				Subjects: subjectsOf(cfg), Logger: log, Announce: out,
				Sink:  sinkOptions(cfg, st, m),
				Extra: extra,
			})
			if err != nil {
				return pipelineExit("ponens sink", err)
			}
			defer p.Close()
			return orExit(exitUnavailable, p.Run(ctx))
		},
	}
	registerNATS(cmd, false)
	registerStore(cmd)
	cmd.Flags().String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (rows, batches, skipped, retries, batch sizes, commit time, lag)")
	return cmd
}

// openedStore is a store opened for the sink: what it appends to, and
// which store it is, for the announcement.
type openedStore struct {
	sink.Appendable
	where string
	// querier reads the same store, for the query service.
	querier api.Querier
}

// openStore opens and migrates the store of c: the ClickHouse server of
// store.dsn when it is set, else the embedded engine on store.path.
func openStore(c config.StoreConfig) (*openedStore, func(), error) {
	if c.DSN != "" {
		s, err := openServer(c.DSN)
		if err != nil {
			return nil, nil, err
		}
		return &openedStore{s, "the ClickHouse server of store.dsn", clickhouse.Querier{Conn: s.Conn()}}, func() { s.Close() }, nil
	}
	if err := storeOrEmpty(c.Path); err != nil {
		return nil, nil, err
	}
	e, err := chdb.Open(chdb.Options{Lib: c.Lib, Path: c.Path})
	if err != nil {
		return nil, nil, err
	}
	if _, err := chdb.Migrate(e); err != nil {
		e.Close()
		return nil, nil, err
	}
	return &openedStore{chdb.NewStore(e), c.Path + " (embedded)", chdb.Querier{E: e}}, func() { e.Close() }, nil
}

// errNotAStore refuses a path, to write a store into, that is a file or a
// directory holding other files and no store.
var errNotAStore = errors.New("not a store (no metadata/): give a new or empty directory, or a store ponens wrote")

// storeOrEmpty refuses path when it is a file, or a directory with files
// in it and without the metadata/ every store has: the engine would make a
// store among someone else's files. A path that does not exist yet, an
// empty directory or a store pass.
func storeOrEmpty(path string) error {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return fmt.Errorf("%w: it is a file", errNotAStore)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil // absent, or unreadable: the engine says what is wrong
	}
	if len(entries) == 0 {
		return nil
	}
	if st, err := os.Stat(filepath.Join(path, "metadata")); err == nil && st.IsDir() {
		return nil
	}
	return fmt.Errorf("%w: it holds other files", errNotAStore)
}

// serverWait is how long a ClickHouse server has to answer and take the
// schema's migrations when a command starts.
const serverWait = 30 * time.Second

// openServer connects to the ClickHouse server of dsn and migrates it.
func openServer(dsn string) (*clickhouse.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	s, err := clickhouse.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if _, err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("migrating the ClickHouse server of store.dsn: %w", err)
	}
	return s, nil
}

// storeExit is the exit error of a store that did not open: 2 for a bad
// setting, 3 otherwise, with hint after the store's name.
func storeExit(c config.StoreConfig, err error, hint string) error {
	if errors.Is(err, clickhouse.ErrDSN) {
		return exitWith(exitBadInput, "%v", err)
	}
	if errors.Is(err, errNotAStore) {
		return exitWith(exitBadInput, "store.path (--store) %s: %v", c.Path, err)
	}
	if c.DSN != "" {
		return exitWith(exitUnavailable, "%v%s", err, hint)
	}
	return exitWith(exitUnavailable, "store %s: %v%s", c.Path, err, hint)
}
