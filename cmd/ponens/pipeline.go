package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/ingest/otlp"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/transport"
)

// pipelineNATS is how the parts of the pipeline of command name connect
// under c: the streams provisioned by a connection in role, waiting up to
// nats.start_wait when patient, and each part connecting in its own role.
func pipelineNATS(c config.NATSConfig, role transport.Role, name string, patient bool, log *slog.Logger) pipeline.NATSOptions {
	at := func(url string) config.NATSConfig {
		cc := c
		cc.URL = url
		return cc
	}
	return pipeline.NATSOptions{
		URL:  c.URL,
		Role: role,
		Open: func(ctx context.Context, url string, role transport.Role) (*nats.Conn, natsjs.JetStream, error) {
			if patient {
				return openStreamsPatiently(ctx, at(url), role, name, log)
			}
			return openStreams(ctx, at(url), role, name)
		},
		Dial: func(url string, role transport.Role) (*nats.Conn, error) {
			return connectNATS(at(url), role, name, false)
		},
	}
}

// embeddedNATS is the embedded server of serve under c, requiring the
// users and TLS of embeddedAuth (said on out), and how its TLS is described.
func embeddedNATS(c config.NATSConfig, name string, listen, serverName string, out io.Writer) (*transport.EmbeddedOptions, string, error) {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	users, tls, err := embeddedAuth(c, say)
	if err != nil {
		return nil, "", exitWith(exitBadInput, "%s: %v", name, err)
	}
	how := "no TLS"
	if tls != nil {
		how = "TLS"
		if tls.ClientCerts {
			how += ", client certificates required"
		}
	}
	return &transport.EmbeddedOptions{Listen: listen, StoreDir: filepath.Clean(c.StoreDir), Name: serverName,
		Users: users, TLS: tls, Subjects: streamConfig(c).Subjects()}, how, nil
}

// gatewayOptions are the gateway's options under cfg, with the OTLP
// receiver unless its mapping does not load (logged).
func gatewayOptions(cfg config.Config, metrics *gateway.Metrics, log *slog.Logger) *pipeline.GatewayOptions {
	o := &pipeline.GatewayOptions{
		Listen: cfg.Gateway.Listen,
		Handler: gateway.Options{
			MaxBodyBytes:   cfg.Gateway.MaxBodyBytes,
			MaxEventBytes:  cfg.Trace.MaxEventBytes,
			Token:          cfg.Gateway.Token,
			DeadLetterRate: float64(cfg.Gateway.DeadLetterRate),
			Metrics:        metrics,
		},
		Server:     gatewayServerOptions(cfg),
		LimitAlarm: cfg.NATS.LimitAlarm,
	}
	otlpOpts := &pipeline.OTLPOptions{
		Converter: otlp.Options{ModelCalls: cfg.OTLP.ModelCalls},
		Handler:   otlp.HandlerOptions{MaxBodyBytes: cfg.OTLP.MaxBodyBytes},
		Listen:    cfg.OTLP.Listen,
	}
	if cfg.Mapping.File != "" {
		t, err := loadMapping(cfg.Mapping)
		if err != nil {
			log.Error("otlp receiver off: the mapping does not load", "error", err)
			return o
		}
		otlpOpts.Mapping = t
	}
	o.OTLP = otlpOpts
	return o
}

// gatewayServerOptions are the HTTP server limits of the gateway's
// configuration.
func gatewayServerOptions(cfg config.Config) gateway.ServerOptions {
	return gateway.ServerOptions{
		ReadTimeout: cfg.Gateway.ReadTimeout, WriteTimeout: cfg.Gateway.WriteTimeout, IdleTimeout: cfg.Gateway.IdleTimeout,
		MaxConcurrent: cfg.Gateway.MaxConcurrent, MaxInFlightBytes: cfg.Gateway.MaxInFlightBytes,
		MaxBodyBytes: cfg.Gateway.MaxBodyBytes,
	}
}

// workerOptions are the options every monitor worker takes under c, its
// rules set.
func workerOptions(c config.Config, rules *ruleset.Set) worker.Options {
	return worker.Options{Rules: rules,
		LeaseTTL: c.Worker.LeaseTTL, CheckpointEvery: c.Worker.CheckpointEvery, IdleAfter: c.Worker.IdleAfter,
		GapTimeout: c.Worker.GapTimeout, MaxBuffered: c.Worker.MaxBuffered, MaxEventBytes: c.Trace.MaxEventBytes, Replicas: c.NATS.Replicas}
}

// pipelineExit is err of the pipeline as an exit error: 2 for a setting
// it cannot use, 3 for anything else (a service that did not answer).
func pipelineExit(name string, err error) error {
	var ce *pipeline.ConfigError
	var ex *exitError
	switch {
	case err == nil, errors.As(err, &ex):
		return err
	case errors.As(err, &ce):
		if ce.Key == "" {
			return exitWith(exitBadInput, "%s: %v", name, err)
		}
		return exitWith(exitBadInput, "%v", err)
	}
	return orExit(exitUnavailable, err)
}
