package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/query/dashboard"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/sink/file"
)

// registerServeStore registers serve's store flags.
func registerServeStore(cmd *cobra.Command) {
	registerStore(cmd)
	cmd.Flags().Bool("no-store", false, "do not store verdicts and events in the embedded store (nor run the query service, which reads it)")
}

// serveStore returns the sink serve runs: into the store of cfg, opened
// now, its metrics registered with reg. Without the engine's library it
// logs how to install it and returns nil, and serve goes on without the
// store; so it does with --no-store.
func serveStore(cmd *cobra.Command, cfg config.Config, reg prometheus.Registerer, log *slog.Logger) (*pipeline.SinkOptions, api.Querier, func(), error) {
	if off, _ := cmd.Flags().GetBool("no-store"); off {
		return nil, nil, func() {}, nil
	}
	st, closeStore, err := openStore(cfg.Store)
	if errors.Is(err, chdb.ErrNoLibrary) {
		log.Warn("running without the store and the query service (ponens sql reads the store)", "err", err)
		return nil, nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, nil, storeExit(cfg.Store, err, " (give --no-store to run without it)")
	}
	return sinkOptions(cfg, st, sink.NewMetrics(reg)), st.querier, closeStore, nil
}

// sinkOptions are the sink's options under cfg, into st.
func sinkOptions(cfg config.Config, st *openedStore, m *sink.Metrics) *pipeline.SinkOptions {
	return &pipeline.SinkOptions{Store: st.Appendable, Where: st.where, Records: st.querier,
		Sink: sink.Options{BatchRows: cfg.Store.BatchRows, FlushEvery: cfg.Store.FlushEvery, AckWait: cfg.Store.AckWait, Metrics: m,
			BeforeAck: holdAck(os.Getenv(holdAckEnv))}}
}

// holdAckEnv names the fault-test setting that holds the sink, after each
// committed batch, for that long before the batch is acknowledged, so a
// test can kill it where a crash stores a batch twice.
const holdAckEnv = "PONENS_FAULT_HOLD_ACK"

// holdAck is the sink's BeforeAck for the duration d ("" or invalid: none).
func holdAck(d string) func(sink.Kind, int) {
	hold, err := time.ParseDuration(d)
	if err != nil || hold <= 0 {
		return nil
	}
	return func(kind sink.Kind, messages int) {
		fmt.Fprintf(os.Stderr, "ponens: %s: %d messages committed, holding the ack for %s (%s)\n", kind, messages, hold, holdAckEnv)
		time.Sleep(hold)
	}
}

// queryServer is the query service serve runs on query.listen over the
// store q, with the rules of set as the summary's rule manifest and the
// dashboard at /; live, when set, is what its /v1/stream follows, and
// alerts what its admin routes manage; its metrics go to reg (a registry
// of its own when nil). It serves HTTPS with query.tls and answers the
// browsers of query.cors_origins.
func queryServer(cfg config.Config, set *ruleset.Set, q api.Querier, live api.Live, alerts api.Alerts, reg *prometheus.Registry) (*api.Server, error) {
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		return nil, exitWith(exitBadInput, "%s", compileProblems(set, errs))
	}
	var tokens []api.Token
	for i, t := range cfg.Query.Tokens {
		tok, ok := api.ParseToken(t.Name, t.SHA256, t.Scope)
		if !ok { // config validation refuses these first
			return nil, exitWith(exitBadInput, "ponens serve: query.tokens[%d]: not a SHA-256 and a scope", i)
		}
		tokens = append(tokens, tok)
	}
	srv, err := api.New(api.Options{Listen: cfg.Query.Listen, Store: q, Live: live, Alerts: alerts, Tokens: tokens, Rules: file.RuleManifest(eng.Rules()), Monitor: set,
		Registry: reg, UI: dashboard.New(dashboard.Options{}),
		TLSCertFile: cfg.Query.TLS.CertFile, TLSKeyFile: cfg.Query.TLS.KeyFile, CORSOrigins: cfg.Query.CORSOrigins})
	if err != nil {
		return nil, exitWith(exitBadInput, "ponens serve: %v", err)
	}
	return srv, nil
}

// queryURL is the base URL of the query service at addr: https with
// query.tls.
func queryURL(cfg config.Config, addr string) string {
	if cfg.Query.TLS.CertFile != "" {
		return "https://" + addr
	}
	return "http://" + addr
}
