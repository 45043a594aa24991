package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newIngestCommand) }

func newIngestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest [--listen ADDR] [--url URL] [--max-body BYTES] [--token TOKEN]",
		Short: "Run the HTTP ingest gateway: POST /v1/events, published to NATS JetStream",
		Long: `Serve the HTTP ingest gateway on --listen (gateway.listen). POST
/v1/events takes one event, a JSON array of events (application/json) or
JSON lines (application/x-ndjson); valid events are published to the EVENTS
stream, invalid ones go to the DEADLETTER stream with their reason, and the
answer lists each problem with its line and field: 200 when all were
accepted, 207 when some were, 422 when none were, 400 for a body that is
not JSON, 413 over --max-body (gateway.max_body_bytes), 401 without the
bearer token when one is configured (gateway.token; prefer the
PONENS_GATEWAY_TOKEN environment variable to --token, which other users
can see). GET /healthz answers 200 while the NATS connection is up.

Connects to nats.url (--url), or, when it is empty, to the embedded server
of a running ` + "`ponens serve`" + ` at nats.listen, and provisions the streams.
Stops on SIGINT or SIGTERM once the requests in progress are answered.
Exit 0 after a clean stop, 2 on a bad configuration or an address that
cannot be listened on, 3 when NATS cannot be reached.`,
		Example: `  ponens ingest --url nats://127.0.0.1:4222 --listen 127.0.0.1:8081
  PONENS_GATEWAY_TOKEN=secret ponens ingest`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd, map[string]string{
				"listen": "gateway.listen", "url": "nats.url", "max-body": "gateway.max_body_bytes", "token": "gateway.token",
			})
			if err != nil {
				return err
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			log := newLogger(cmd, cfg.Log.Level)
			setMemoryLimit(cfg.Runtime, log)
			p, err := pipeline.New(ctx, pipeline.Options{
				NATS:     pipelineNATS(cfg.NATS, transport.RoleGateway, "ponens ingest", true, log),
				Subjects: subjectsOf(cfg), Logger: log, Announce: cmd.ErrOrStderr(),
				Gateway: gatewayOptions(cfg, gateway.NewMetrics(), log),
			})
			if err != nil {
				return pipelineExit("ponens ingest", err)
			}
			defer p.Close()
			return orExit(exitUnavailable, p.Run(ctx))
		},
	}
	cmd.Flags().String("listen", "", "host:port to serve on (gateway.listen, default 127.0.0.1:8080)")
	cmd.Flags().String("url", "", "NATS server URL (nats.url; empty: the embedded server at nats.listen)")
	cmd.Flags().Int64("max-body", 0, "largest request body in bytes (gateway.max_body_bytes, default 8 MiB)")
	cmd.Flags().String("token", "", "bearer token POSTs must carry (gateway.token; prefer PONENS_GATEWAY_TOKEN)")
	return cmd
}

// commandContext ends when cmd's context does or on SIGINT or SIGTERM.
func commandContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

// newLogger logs to cmd's stderr at level (log.level).
func newLogger(cmd *cobra.Command, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: l}))
}

// natsURL is the server the commands connect to: nats.url, or the embedded
// server `ponens serve` runs at nats.listen.
func natsURL(c config.NATSConfig) string {
	if c.URL != "" {
		return c.URL
	}
	return "nats://" + c.Listen
}

// streamConfig is the shape of the streams the configuration asks for.
func streamConfig(c config.NATSConfig) transport.StreamConfig {
	return transport.StreamConfig{
		Prefix:            c.Prefix,
		Partitions:        c.Partitions,
		Duplicates:        c.DuplicateWindow,
		VerdictDuplicates: c.VerdictWindow(),
		MaxAge:            c.MaxAge,
		Replicas:          c.Replicas,
		Events:            transport.Limits{MaxBytes: c.Events.MaxBytes, MaxMsgs: c.Events.MaxMsgs},
		Verdicts:          transport.Limits{MaxBytes: c.Verdicts.MaxBytes, MaxMsgs: c.Verdicts.MaxMsgs},
		DeadLetters:       transport.Limits{MaxBytes: c.DeadLetters.MaxBytes, MaxAge: c.DeadLetters.MaxAge},
	}
}

// openStreams connects to the configured NATS server in role
// (clientAuth) and provisions the streams, for a one-shot command: it fails at once when the server cannot
// be reached. Its errors are exit errors: 2 when the configuration does not
// fit the existing streams, 3 when the server cannot be reached or refuses.
func openStreams(ctx context.Context, c config.NATSConfig, role transport.Role, name string) (*nats.Conn, natsjs.JetStream, error) {
	return dialStreams(ctx, c, role, name, 0, nil)
}

// openStreamsPatiently is openStreams for a command that serves: for up to
// nats.start_wait it waits for the server to be reachable and for
// JetStream to answer (transport.Unavailable), logging each new try.
func openStreamsPatiently(ctx context.Context, c config.NATSConfig, role transport.Role, name string, log *slog.Logger) (*nats.Conn, natsjs.JetStream, error) {
	return dialStreams(ctx, c, role, name, c.StartWait, log)
}

func dialStreams(ctx context.Context, c config.NATSConfig, role transport.Role, name string, wait time.Duration, log *slog.Logger) (*nats.Conn, natsjs.JetStream, error) {
	url := natsURL(c)
	nc, err := connectNATS(c, role, name, wait > 0)
	if err != nil {
		return nil, nil, err
	}
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncTimeout(transport.DefaultTimeout))
	if err != nil {
		nc.Close()
		return nil, nil, exitWith(exitUnavailable, "%s: %s: %v", name, url, err)
	}
	start := time.Now()
	deadline := start.Add(wait)
	for pause := 250 * time.Millisecond; ; pause = min(2*pause, 5*time.Second) {
		err = provisionWithin(ctx, js, c, role, wait > 0, time.Until(deadline))
		if refused := transport.Refusal(nc, err); refused != nil {
			err = refused
		}
		left := time.Until(deadline)
		if err == nil || !transport.Unavailable(err) || ctx.Err() != nil || left <= 0 {
			break
		}
		pause = min(pause, left)
		log.Warn("NATS is not available yet; trying again", "url", url, "connected", nc.IsConnected(), "in", pause, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	if err == nil {
		return nc, js, nil
	}
	connected := nc.IsConnected()
	nc.Close()
	waited := time.Since(start).Round(100 * time.Millisecond)
	switch {
	case errors.Is(err, transport.ErrPartitionChange):
		return nil, nil, exitWith(exitBadInput, "%s: %v", name, err)
	case ctx.Err() != nil:
		return nil, nil, exitWith(exitUnavailable, "%s: stopped after waiting %s for %s: %v", name, waited, url, err)
	case !transport.Unavailable(err):
		return nil, nil, exitWith(exitUnavailable, "%s: %s: %v", name, url, err)
	case !connected:
		return nil, nil, exitWith(exitUnavailable, "%s: %s not reachable (waited %s, nats.start_wait %s): %v", name, url, waited, wait, err)
	default:
		return nil, nil, exitWith(exitUnavailable, "%s: %s: JetStream did not answer (waited %s, nats.start_wait %s): %v", name, url, waited, wait, err)
	}
}

// provisionWithin provisions the streams; when bounded, within left (at
// least a second, at most the client's usual five). A role other than
// admin, which may not manage the streams, uses the streams as they exist
// when they do (transport.Attach: their bounds are the provisioner's) and
// provisions them only when they do not, on a server without roles.
func provisionWithin(ctx context.Context, js natsjs.JetStream, c config.NATSConfig, role transport.Role, bounded bool, left time.Duration) error {
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, min(max(left, time.Second), transport.DefaultTimeout))
		defer cancel()
	}
	if role != transport.RoleAdmin {
		err := transport.Attach(ctx, js, streamConfig(c))
		if !errors.Is(err, natsjs.ErrStreamNotFound) {
			return err
		}
	}
	return transport.Provision(ctx, js, streamConfig(c))
}
