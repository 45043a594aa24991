package pipeline

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/ingest/otlp"
	"github.com/ponens/ponens/transport"
)

// limitCheckEvery is how often the gateway compares the streams with
// their bounds.
const limitCheckEvery = 10 * time.Second

// GatewayOptions are the HTTP ingest gateway of a pipeline.
type GatewayOptions struct {
	// Listen is the gateway's host:port.
	Listen string
	// Handler is the gateway's options; Health, Streams and Logger are
	// filled in by the pipeline, and Metrics when unset.
	Handler gateway.Options
	// Server is the HTTP server's limits; Logger is filled in.
	Server gateway.ServerOptions
	// LimitAlarm is the fraction of a stream's bound at which the gateway
	// warns.
	LimitAlarm float64
	// OTLP, when set, receives OpenTelemetry spans at POST /v1/traces on
	// the gateway's address, and on its own address when it has one.
	OTLP *OTLPOptions
}

// OTLPOptions are the OTLP/HTTP receiver beside the gateway.
type OTLPOptions struct {
	// Mapping maps spans to events (nil: mapping.Default()).
	Mapping   *mapping.Table
	Converter otlp.Options
	Handler   otlp.HandlerOptions
	// Listen, when set, is a second address serving only /v1/traces.
	Listen string
}

// gatewayPart is the gateway, listening since New.
type gatewayPart struct {
	o        GatewayOptions
	nc       *nats.Conn
	js       jetstream.JetStream
	pub      *transport.Publisher
	handler  http.Handler
	ln, otln net.Listener
	recv     http.Handler
}

func (p *Pipeline) addGateway(o GatewayOptions) error {
	nc, js, err := p.conn(transport.RoleGateway)
	if err != nil {
		return err
	}
	log := p.o.Logger
	g := &gatewayPart{o: o, nc: nc, js: js, pub: transport.NewPublisher(js, p.o.Subjects, transport.PublisherOptions{})}
	p.gw = g
	h := o.Handler
	h.Health = natsHealth(nc)
	h.Streams = func(ctx context.Context) (any, error) { return transport.Usage(ctx, js, o.LimitAlarm) }
	h.Logger = log
	if h.Metrics == nil {
		h.Metrics = gateway.NewMetrics()
	}
	g.o.Handler = h
	g.handler = gateway.New(h, g.pub, LoggedDeadLetters{Sink: transport.NewDeadLetters(js, p.o.Subjects), Log: log})
	if o.OTLP != nil {
		table := o.OTLP.Mapping
		if table == nil {
			table = mapping.Default()
		}
		ho := o.OTLP.Handler
		ho.Logger = log
		g.recv = bearer(h.Token, otlp.Handler(otlp.NewConverter(table, o.OTLP.Converter), g.pub, ho))
		mux := http.NewServeMux()
		mux.Handle("/", g.handler)
		mux.Handle("/v1/traces", g.recv)
		g.handler = mux
	}
	g.o.Server.Logger = log
	if g.ln, err = net.Listen("tcp", o.Listen); err != nil {
		return &ConfigError{Key: "gateway.listen", Err: err}
	}
	if g.recv != nil && o.OTLP.Listen != "" {
		if g.otln, err = net.Listen("tcp", o.OTLP.Listen); err != nil {
			return &ConfigError{Key: "otlp.listen", Err: err}
		}
	}
	p.actors = append(p.actors, Actor{Name: "gateway", Run: func(ctx context.Context) error { return g.run(ctx, p) }})
	return nil
}

// Gateway is the address the gateway listens on, nil without one.
func (p *Pipeline) Gateway() net.Addr {
	if p.gw == nil {
		return nil
	}
	return p.gw.ln.Addr()
}

// close releases what New took for a gateway that did not run.
func (g *gatewayPart) close() {
	for _, ln := range []net.Listener{g.ln, g.otln} {
		if ln != nil {
			ln.Close()
		}
	}
	g.pub.Close()
}

// run serves the gateway, with metrics at /metrics, and the OTLP receiver
// until ctx ends, then stops once the requests in progress are answered.
func (g *gatewayPart) run(ctx context.Context, p *Pipeline) error {
	out, log := p.o.Announce, p.o.Logger
	srv := gateway.NewServer(g.o.Server, g.handler)
	auth := ""
	if g.o.Handler.Token != "" {
		auth = ", bearer token required"
	}
	fmt.Fprintf(out, "gateway   http://%s/v1/events (POST), publishing to %s%s\n", g.ln.Addr(), p.url, auth)
	fmt.Fprintf(out, "otlp      http://%s/v1/traces (POST, OpenTelemetry GenAI spans)\n", g.ln.Addr())
	if g.otln != nil {
		fmt.Fprintf(out, "otlp      http://%s/v1/traces (POST, otlp.listen)\n", g.otln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(g.ln) }()
	stopOTLP := g.serveOTLP(log)
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = transport.WatchLimits(watchCtx, g.js, g.o.LimitAlarm, limitCheckEvery, log, g.o.Handler.Metrics.ObserveStreams)
	}()
	defer func() { stopWatch(); <-watched }()
	select {
	case <-ctx.Done():
	case err := <-served:
		_ = stopOTLP()
		return err
	}
	down, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errors.Join(srv.Shutdown(down), stopOTLP())
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if perr := g.pub.Close(); perr != nil {
		err = errors.Join(err, perr)
	}
	if err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	return nil
}

// serveOTLP serves the OTLP receiver alone on its own address, with the
// gateway's server limits, when it has one; the returned function shuts it
// down and waits for it. The server failing is logged: the gateway's own
// address still takes spans.
func (g *gatewayPart) serveOTLP(log *slog.Logger) func() error {
	if g.otln == nil {
		return func() error { return nil }
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/traces", g.recv)
	srv := gateway.NewServer(g.o.Server, mux)
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(g.otln)
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("otlp receiver stopped", "listen", g.o.OTLP.Listen, "err", err)
		}
		served <- err
	}()
	return func() error {
		down, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(down)
		<-served
		return err
	}
}

// bearer requires "Authorization: Bearer token" when token is set.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "a bearer token is required (gateway.token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// natsHealth reports an error unless nc is connected.
func natsHealth(nc *nats.Conn) func() error {
	return func() error {
		if s := nc.Status(); s != nats.CONNECTED {
			return fmt.Errorf("nats: %s", s)
		}
		return nil
	}
}
