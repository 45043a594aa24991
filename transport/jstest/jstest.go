// Package jstest starts real NATS servers with JetStream for tests: one
// embedded server on a random loopback port (Start), or a cluster of them
// on loopback ports (Cluster) for node-loss tests; and a server without
// JetStream (Plain) for tests of what a client refuses. Everything they start is
// stopped, and its storage removed, when the test ends.
package jstest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/transport"
)

// ReadyTimeout bounds the wait for a server or a cluster to be ready.
const ReadyTimeout = 30 * time.Second

// Start starts an embedded server with JetStream storing in t.TempDir(),
// on a random loopback port, and returns it with a connection and a
// JetStream context on it. All three are closed when the test ends.
func Start(t testing.TB) (*server.Server, *nats.Conn, natsjs.JetStream) {
	t.Helper()
	s, err := transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	nc, js := Connect(t, s.ClientURL())
	return s, nc, js
}

// Plain starts a NATS server without JetStream on a random loopback port,
// with its options adjusted by adjust (users, permissions), and returns its
// client URL. It is stopped when the test ends.
func Plain(t testing.TB, adjust func(*server.Options)) string {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true}
	adjust(o)
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(ReadyTimeout) {
		t.Fatal("the NATS server is not ready")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// Connect connects to url (one or several comma-separated server URLs),
// reconnecting without limit every 50ms, and returns the connection and a
// JetStream context whose asynchronous publishes time out after 5 seconds.
// The connection is closed when the test ends.
func Connect(t testing.TB, url string) (*nats.Conn, natsjs.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Nodes is a running cluster of JetStream servers on loopback.
type Nodes struct {
	t       testing.TB
	Servers []*server.Server // nil for a stopped node
	opts    []transport.EmbeddedOptions
}

// Cluster starts n clustered JetStream servers on loopback ports, each
// storing in its own t.TempDir(), and returns once they have elected a
// JetStream meta leader. They are stopped when the test ends.
func Cluster(t testing.TB, n int) *Nodes {
	t.Helper()
	ports := FreePorts(t, 2*n) // a client and a route port per node
	routes := make([]string, n)
	for i := range n {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i])
	}
	c := &Nodes{t: t, Servers: make([]*server.Server, n), opts: make([]transport.EmbeddedOptions, n)}
	for i := range n {
		c.opts[i] = transport.EmbeddedOptions{
			Name:     fmt.Sprintf("n%d", i+1),
			Listen:   fmt.Sprintf("127.0.0.1:%d", ports[i]),
			StoreDir: t.TempDir(),
			Cluster: &transport.ClusterOptions{
				Name:   "ponens-test",
				Listen: fmt.Sprintf("127.0.0.1:%d", ports[n+i]),
				Routes: routes,
			},
			ReadyTimeout: ReadyTimeout,
		}
	}
	t.Cleanup(func() {
		for i := range c.Servers {
			c.Stop(i)
		}
	})
	for i := range n {
		c.Restart(i)
	}
	c.WaitForLeader()
	return c
}

// URL is the client URLs of every node, comma-separated, for nats.Connect.
func (c *Nodes) URL() string {
	urls := make([]string, len(c.opts))
	for i, o := range c.opts {
		urls[i] = "nats://" + o.Listen
	}
	return strings.Join(urls, ",")
}

// Connect connects to the cluster as the package's Connect does.
func (c *Nodes) Connect() (*nats.Conn, natsjs.JetStream) {
	c.t.Helper()
	return Connect(c.t, c.URL())
}

// Stop shuts node i down, as a node loss; its storage stays.
func (c *Nodes) Stop(i int) {
	if s := c.Servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.Servers[i] = nil
	}
}

// Restart starts node i (again), on its ports and storage.
func (c *Nodes) Restart(i int) {
	c.t.Helper()
	if c.Servers[i] != nil {
		return
	}
	s, err := transport.StartEmbedded(c.opts[i])
	if err != nil {
		c.t.Fatalf("node %d: %v", i, err)
	}
	c.Servers[i] = s
}

// WaitForLeader waits until the running nodes have a JetStream meta
// leader they are all current with.
func (c *Nodes) WaitForLeader() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	var running []*server.Server
	for _, s := range c.Servers {
		if s != nil {
			running = append(running, s)
		}
	}
	if err := transport.WaitForMetaLeader(ctx, running...); err != nil {
		c.t.Fatal(err)
	}
}

// FreePorts returns n distinct loopback ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// Messages returns every message stored in stream, in stream order.
func Messages(t testing.TB, js natsjs.JetStream, stream string) []natsjs.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, natsjs.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []natsjs.Msg
	for uint64(len(msgs)) < info.State.Msgs {
		batch, err := c.Fetch(int(info.State.Msgs)-len(msgs), natsjs.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := len(msgs)
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		if batch.Error() != nil {
			t.Fatal(batch.Error())
		}
		if len(msgs) == n {
			t.Fatalf("read %d of the %d messages of %s", n, info.State.Msgs, stream)
		}
	}
	return msgs
}

// SubjectCounts returns the subjects stored in stream with their message
// counts.
func SubjectCounts(t testing.TB, js natsjs.JetStream, stream string) map[string]uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, natsjs.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}
