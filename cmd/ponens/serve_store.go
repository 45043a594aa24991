package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
)

// registerServeStore registers serve's store flags.
func registerServeStore(cmd *cobra.Command) {
	registerStore(cmd)
	cmd.Flags().Bool("no-store", false, "do not store verdicts and events in the embedded store")
}

// serveStore returns what serve runs to store the streams: the sink into
// the embedded store, opened now, on a connection of its own in the sink
// role, its metrics registered with reg. Without the engine's library it logs how
// to install it and returns nil, and serve goes on without the store; so
// it does with --no-store.
func serveStore(cmd *cobra.Command, cfg config.Config, reg prometheus.Registerer, log *slog.Logger, out io.Writer) (run func(context.Context, config.Config) error, closeStore func(), err error) {
	if off, _ := cmd.Flags().GetBool("no-store"); off {
		return nil, func() {}, nil
	}
	st, closeStore, err := openStore(cfg.Store)
	if errors.Is(err, chdb.ErrNoLibrary) {
		log.Warn("running without the store (ponens sql reads it)", "err", err)
		return nil, func() {}, nil
	}
	if errors.Is(err, errDSN) {
		return nil, nil, exitWith(exitBadInput, "%v", err)
	}
	if err != nil {
		return nil, nil, exitWith(exitUnavailable, "store %s: %v (give --no-store to run without it)", cfg.Store.Path, err)
	}
	m := sink.NewMetrics(reg)
	return func(ctx context.Context, cfg config.Config) error {
		nc, err := connectNATS(cfg.NATS, transport.RoleSink, "ponens serve", false)
		if err != nil {
			return err
		}
		defer nc.Close()
		return runSink(ctx, cfg, newJetStream(nc), st, m, log, out)
	}, closeStore, nil
}
