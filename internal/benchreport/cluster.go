package benchreport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// clusterSection names the rows of the cluster measurement.
const clusterSection = "pipeline, 3 workers, 3-node NATS cluster (R3)"

// clusterRows loads a pipeline spread over processes: three nats-server
// processes clustered on loopback with every stream on three replicas,
// `ponens serve --url` with one worker and the alert stage, and two
// `ponens worker` processes.
func clusterRows(ctx context.Context, o Options) []Row {
	ls := loads(o)[:2]
	rows := make([]Row, len(ls))
	for i, l := range ls {
		rows[i] = Row{Section: clusterSection, What: l.what}
	}
	missing := func(why string) []Row {
		for i := range rows {
			rows[i].Missing = why
		}
		return rows
	}
	bin := o.NATSServer
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("nats-server"); err != nil {
			return missing(fmt.Sprintf("no nats-server binary: give --nats-server PATH (go install github.com/nats-io/nats-server/v2@%s)", natsServerVersion()))
		}
	}
	o.say("cluster: starting three nats-server processes and the pipeline")
	c, err := startCluster(ctx, o, bin)
	if err != nil {
		return missing(err.Error())
	}
	defer c.stop()
	for i, l := range ls {
		o.say("cluster: %s", l.what)
		r, err := bench(ctx, o, c.env, "--url", c.url, "--rate", l.rate, "--runs", l.runs, "--duration", l.duration)
		if err != nil {
			rows[i].Missing = err.Error()
			continue
		}
		rows[i].Figure = describe(i, r)
	}
	return rows
}

// natsServerVersion is the nats-server version ponens is built with.
func natsServerVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/nats-io/nats-server/v2" {
				return m.Version
			}
		}
	}
	return "latest"
}

// cluster is the processes of the cluster measurement.
type cluster struct {
	url   string
	env   []string
	dir   string
	procs []*exec.Cmd
	logs  []*syncBuffer
}

// syncBuffer is a bytes.Buffer safe for a process writing and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs bin with args in the background, its output kept.
func (c *cluster) start(env []string, bin string, args ...string) (*syncBuffer, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.procs = append(c.procs, cmd)
	c.logs = append(c.logs, out)
	return out, nil
}

// startCluster starts the nodes, waits until each accepts clients, then
// starts serve and the two workers and waits until serve is up.
func startCluster(ctx context.Context, o Options, natsServer string) (_ *cluster, err error) {
	dir, err := os.MkdirTemp("", "ponens-bench-cluster-*")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	clients, routes := make([]string, 3), make([]string, 3)
	for i := range clients {
		if clients[i], err = freeAddr(); err != nil {
			return nil, err
		}
		r, err := freeAddr()
		if err != nil {
			return nil, err
		}
		routes[i] = "nats://" + r
	}
	for i, addr := range clients {
		host, port, _ := strings.Cut(addr, ":")
		if _, err := c.start(nil, natsServer, "-a", host, "-p", port, "-n", fmt.Sprintf("n%d", i+1), "-js",
			"-sd", filepath.Join(dir, fmt.Sprintf("n%d", i+1)), "--cluster_name", "ponens-bench",
			"--cluster", routes[i], "--routes", strings.Join(routes, ",")); err != nil {
			return nil, err
		}
	}
	urls := make([]string, 3)
	for i, addr := range clients {
		if err := waitDial(ctx, addr, 30*time.Second); err != nil {
			return nil, fmt.Errorf("nats-server n%d: %v", i+1, err)
		}
		urls[i] = "nats://" + addr
	}
	c.url = strings.Join(urls, ",")
	gw, err := freeAddr()
	if err != nil {
		return nil, err
	}
	c.env = []string{"PONENS_NATS_URL=" + c.url, "PONENS_NATS_REPLICAS=3", "PONENS_GATEWAY_LISTEN=" + gw}
	rules := filepath.Join(o.Repo, "examples/rules")
	serve, err := c.start(c.env, o.Binary, "serve", "--rules", rules, "--workers", "1", "--no-store")
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, serve, "gateway ", 60*time.Second); err != nil {
		return nil, fmt.Errorf("ponens serve: %v: %s", err, lastLine(serve.String()))
	}
	for range 2 {
		if _, err := c.start(c.env, o.Binary, "worker", "--rules", rules); err != nil {
			return nil, err
		}
	}
	if err := waitConsumers(ctx, c.url, 60*time.Second); err != nil {
		return nil, fmt.Errorf("the workers: %v: %s", err, lastLine(serve.String()))
	}
	return c, nil
}

// waitConsumers waits until a worker consumes every partition of the
// events stream (the consumers the workers create, named <prefix>-p<k>).
func waitConsumers(ctx context.Context, url string, within time.Duration) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	for k := 0; k < schema.DefaultPartitions; {
		name := fmt.Sprintf("%s-p%d", schema.DefaultPrefix, k)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.Consumer(cctx, schema.StreamEvents, name)
		cancel()
		if err == nil {
			k++
			continue
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no consumer %s after %s: %v", name, within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// stop interrupts ponens, kills the nodes, and removes their storage.
func (c *cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(c.dir)
}

// waitDial waits until addr accepts a connection.
func waitDial(ctx context.Context, addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not accepting clients on %s after %s: %v", addr, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFor waits until out has printed want.
func waitFor(ctx context.Context, out *syncBuffer, want string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("did not start within " + within.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
