package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ponens/ponens/schema"
)

// DefaultMaxPayload is the largest message the embedded server accepts
// unless EmbeddedOptions says otherwise: room for an event of the default
// trace.max_event_bytes (1 MiB) with its headers, and more.
const DefaultMaxPayload = 4 << 20

// EmbeddedOptions configures an in-process NATS server with JetStream.
type EmbeddedOptions struct {
	// Listen is the host:port clients connect to; port -1 picks a free one
	// (the server's ClientURL says which). Empty means "127.0.0.1:-1".
	Listen string
	// StoreDir is the directory JetStream keeps its streams in (required).
	StoreDir string
	// Name names the server; required and unique in a cluster.
	Name string
	// MaxPayload is the largest message accepted (DefaultMaxPayload when 0).
	MaxPayload int32
	// Cluster, when set, makes the server one node of a JetStream cluster.
	Cluster *ClusterOptions
	// ReadyTimeout bounds the wait for the server to accept clients (and
	// routes); 10 seconds when 0.
	ReadyTimeout time.Duration
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Users, when not empty, are the only clients the server accepts,
	// each with the permissions of its role (Permissions) over Subjects.
	Users []User
	// Subjects are the subjects the users' permissions name (the default
	// prefix when empty).
	Subjects schema.Subjects
	// TLS, when set, makes the server require TLS, and client
	// certificates when TLS.ClientCerts.
	TLS *ServerTLS
}

// ClusterOptions makes an embedded server a cluster node.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Listen is the host:port other nodes route to.
	Listen string
	// Routes are the route URLs (nats-route://host:port) of the nodes; a
	// node may list itself.
	Routes []string
}

// StartEmbedded starts an in-process NATS server with JetStream storing
// under opts.StoreDir and returns it once it accepts client connections
// and JetStream is enabled. The caller shuts it down (Shutdown, then
// WaitForShutdown before removing the store). A cluster node returns before
// the cluster has elected its JetStream meta leader, which needs a quorum
// of the other nodes; wait for that separately.
func StartEmbedded(opts EmbeddedOptions) (*server.Server, error) {
	if opts.StoreDir == "" {
		return nil, errors.New("embedded nats: a JetStream store directory is required")
	}
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:-1"
	}
	host, port, err := splitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: listen %q: %w", listen, err)
	}
	so := &server.Options{
		ServerName: opts.Name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		MaxPayload: opts.MaxPayload,
		NoSigs:     true,
		NoLog:      opts.Logger == nil,

		DisableJetStreamBanner: true,
	}
	if so.MaxPayload == 0 {
		so.MaxPayload = DefaultMaxPayload
	}
	subjects := opts.Subjects
	if subjects.Prefix == "" {
		subjects.Prefix = schema.DefaultPrefix
	}
	if err := serverAuth(so, opts.Users, subjects, opts.TLS); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if c := opts.Cluster; c != nil {
		if opts.Name == "" {
			return nil, errors.New("embedded nats: a cluster node needs a name")
		}
		chost, cport, err := splitHostPort(c.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats: cluster listen %q: %w", c.Listen, err)
		}
		so.Cluster = server.ClusterOpts{Name: c.Name, Host: chost, Port: cport}
		for _, r := range c.Routes {
			u := server.RoutesFromStr(r)
			if len(u) == 0 {
				return nil, fmt.Errorf("embedded nats: route %q is not a URL", r)
			}
			so.Routes = append(so.Routes, u...)
		}
	}
	if err := portFree(host, port); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	s, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if opts.Logger != nil {
		s.SetLogger(slogAdapter{opts.Logger}, false, false)
	}
	s.Start()
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if !s.ReadyForConnections(timeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats: not accepting connections on %s after %s (is the address free?)", listen, timeout)
	}
	if !s.JetStreamEnabled() {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats: JetStream did not start (is %s writable?)", opts.StoreDir)
	}
	return s, nil
}

// WaitForMetaLeader waits until the JetStream cluster the servers form has
// a meta leader, every running server is current with it, and the leader
// knows each as an online peer (or ctx ends).
func WaitForMetaLeader(ctx context.Context, servers ...*server.Server) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var leader *server.Server
		current, running := true, 0
		for _, s := range servers {
			if !s.Running() {
				continue
			}
			running++
			if s.JetStreamIsLeader() {
				leader = s
			}
			current = current && s.JetStreamIsCurrent()
		}
		// The leader places replicas only on peers it has seen online with
		// stats: until then an R3 stream is refused ("no suitable peers").
		if leader != nil && current && len(leader.JetStreamClusterPeers()) >= running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("jetstream cluster: no meta leader: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// portFree fails fast when a fixed port is taken: the server would only
// log it and never become ready.
func portFree(host string, port int) error {
	if port <= 0 {
		return nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// splitHostPort splits host:port, allowing port -1 (any free port).
func splitHostPort(hp string) (string, int, error) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from -1 to 65535", p)
	}
	return host, port, nil
}

// slogAdapter is the nats-server Logger over slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) { a.l.Info(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Tracef(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
