package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

// Actor is a long-lived part: Run works until ctx ends, then returns nil,
// or returns an error when the part cannot go on.
type Actor struct {
	Name string
	Run  func(ctx context.Context) error
}

// Options says which parts a pipeline runs; a nil part is not run.
type Options struct {
	NATS NATSOptions
	// Subjects are the pipeline's subjects and partitions.
	Subjects schema.Subjects
	// Logger logs the parts' warnings (default: discard).
	Logger *slog.Logger
	// Announce is where the parts say where they listen and what they
	// store (default: discard).
	Announce io.Writer

	Gateway *GatewayOptions
	Workers *WorkersOptions
	// Reload, when set, runs beside the workers and may reload their rules
	// (worker.Reload) until ctx ends.
	Reload func(ctx context.Context, workers []*worker.Worker) error
	Alerts *AlertOptions
	Sink   *SinkOptions
	// Extra are further parts run with the others, such as the query
	// service.
	Extra []Actor
}

// NATSOptions says which NATS server the pipeline uses and how its parts
// connect to it.
type NATSOptions struct {
	// Embedded, when set, is a server New starts (and Close stops) before
	// anything connects; URL is then its client URL.
	Embedded *transport.EmbeddedOptions
	// URL is the server to join when Embedded is nil.
	URL string
	// Role is the role of the connection that provisions the streams
	// (default admin); a part in this role shares it.
	Role transport.Role
	// Open connects to url in role and provisions (or attaches to) the
	// streams.
	Open func(ctx context.Context, url string, role transport.Role) (*nats.Conn, jetstream.JetStream, error)
	// Dial connects a part to url in its role.
	Dial func(url string, role transport.Role) (*nats.Conn, error)
}

// Pipeline is the parts of Options, constructed and connected, ready to
// Run. It is not safe for concurrent use, except Workers.
type Pipeline struct {
	o      Options
	srv    *server.Server
	url    string
	nc     *nats.Conn
	js     jetstream.JetStream
	conns  map[transport.Role]*nats.Conn
	actors []Actor

	workers []*worker.Worker
	gw      *gatewayPart
}

// New starts the embedded server when asked, provisions the streams,
// connects every part in its role and constructs it. On an error what was
// started is stopped again.
func New(ctx context.Context, o Options) (_ *Pipeline, err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Announce == nil {
		o.Announce = io.Discard
	}
	if o.NATS.Role == "" {
		o.NATS.Role = transport.RoleAdmin
	}
	p := &Pipeline{o: o, url: o.NATS.URL, conns: map[transport.Role]*nats.Conn{}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if o.NATS.Embedded != nil {
		if p.srv, err = transport.StartEmbedded(*o.NATS.Embedded); err != nil {
			return nil, &ConfigError{Err: err}
		}
		p.url = p.srv.ClientURL()
	}
	if p.nc, p.js, err = o.NATS.Open(ctx, p.url, o.NATS.Role); err != nil {
		return nil, err
	}
	p.conns[o.NATS.Role] = p.nc
	if o.Gateway != nil {
		if err := p.addGateway(*o.Gateway); err != nil {
			return nil, err
		}
	}
	if o.Workers != nil {
		if err := p.addWorkers(*o.Workers); err != nil {
			return nil, err
		}
	}
	if o.Alerts != nil {
		if err := p.addAlerts(ctx, *o.Alerts); err != nil {
			return nil, err
		}
	}
	if o.Sink != nil {
		if err := p.addSink(ctx, *o.Sink); err != nil {
			return nil, err
		}
	}
	p.actors = append(p.actors, o.Extra...)
	return p, nil
}

// conn is the connection of the parts in role: the provisioning one when
// the role is its, else one of their own, made once.
func (p *Pipeline) conn(role transport.Role) (*nats.Conn, jetstream.JetStream, error) {
	nc, ok := p.conns[role]
	if !ok {
		var err error
		if nc, err = p.o.NATS.Dial(p.url, role); err != nil {
			return nil, nil, err
		}
		p.conns[role] = nc
	}
	if nc == p.nc {
		return nc, p.js, nil
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(transport.DefaultTimeout))
	if err != nil {
		return nil, nil, err
	}
	return nc, js, nil
}

// Add adds a part to run with the others; call it before Run.
func (p *Pipeline) Add(a Actor) { p.actors = append(p.actors, a) }

// Server is the embedded server, nil when the pipeline joined one.
func (p *Pipeline) Server() *server.Server { return p.srv }

// URL is the NATS server's client URL.
func (p *Pipeline) URL() string { return p.url }

// Conn and JetStream are the provisioning connection, in NATSOptions.Role.
func (p *Pipeline) Conn() *nats.Conn { return p.nc }

// JetStream is the JetStream context of Conn.
func (p *Pipeline) JetStream() jetstream.JetStream { return p.js }

// Workers are the pipeline's monitor workers.
func (p *Pipeline) Workers() []*worker.Worker { return p.workers }

// Run runs every part until ctx ends, then returns nil once each stopped,
// or until one fails, then stops the others and returns the first error,
// as the part said it (each part's errors name what failed). A part that
// returns nil early lets the others go on.
func (p *Pipeline) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, a := range p.actors {
		g.Go(func() error { return a.Run(gctx) })
	}
	return g.Wait()
}

// Close closes the connections and stops the embedded server; call it
// after Run returned.
func (p *Pipeline) Close() {
	if p.gw != nil {
		p.gw.close()
	}
	for _, nc := range p.conns {
		nc.Close()
	}
	if p.srv != nil {
		p.srv.Shutdown()
		p.srv.WaitForShutdown()
	}
}

// Settled waits, at most within, until the workers own every partition
// between them and the ownership has not changed for two balancing periods,
// and the alert stage's and the sink's consumers exist: a load started
// earlier would measure partitions moving between workers. It returns an
// error when running ends first (a part failed).
func (p *Pipeline) Settled(ctx context.Context, within time.Duration, running <-chan struct{}) error {
	deadline := time.Now().Add(within)
	partitions := p.o.Subjects.Partitions
	var last string
	var since time.Time
	for {
		var owned []int
		for _, w := range p.workers {
			owned = append(owned, w.Owned()...)
		}
		slices.Sort(owned)
		state := fmt.Sprint(owned)
		if state != last {
			last, since = state, time.Now()
		}
		complete := len(p.workers) == 0 || len(owned) == partitions && len(slices.Compact(owned)) == partitions
		if complete && time.Since(since) >= 2*time.Second && p.consumersExist(ctx) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the workers did not settle on the %d partitions in %s (they own %s)", partitions, within, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-running:
			return errors.New("the pipeline stopped before it settled")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// consumersExist reports whether the durable consumers of the alert stage
// and of the sink exist.
func (p *Pipeline) consumersExist(ctx context.Context) bool {
	var want [][2]string
	if p.o.Alerts != nil {
		want = append(want, [2]string{schema.StreamVerdicts, p.o.Alerts.durable(p.o.Subjects)})
	}
	if p.o.Sink != nil {
		want = append(want, [2]string{schema.StreamVerdicts, p.o.Subjects.Prefix + "-store-verdicts"}, [2]string{schema.StreamEvents, p.o.Subjects.Prefix + "-store-events"})
	}
	for _, c := range want {
		if _, err := p.js.Consumer(ctx, c[0], c[1]); err != nil {
			return false
		}
	}
	return true
}

// ConfigError is a setting the pipeline cannot use, such as an address
// that cannot be listened on: Key names the setting (empty: the error
// names it).
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return e.Err.Error()
	}
	return e.Key + ": " + e.Err.Error()
}

func (e *ConfigError) Unwrap() error { return e.Err }
