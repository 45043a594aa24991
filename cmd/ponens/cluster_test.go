package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

var (
	natsServerOnce sync.Once
	natsServerPath string
	natsServerErr  error
)

// natsServerBinary builds the NATS server of go.mod's version, once per
// test process, so that cluster nodes run as processes of their own.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	natsServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ponens-nats-server-*")
		if err != nil {
			natsServerErr = err
			return
		}
		natsServerPath = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", natsServerPath, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsServerErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	if natsServerErr != nil {
		t.Fatal(natsServerErr)
	}
	return natsServerPath
}

// natsNode is one node of a NATS cluster running as its own process.
type natsNode struct {
	name, client, route, dir string
	cmd                      *exec.Cmd
	log                      *bytes.Buffer
}

// clusterProcesses starts n NATS server processes on loopback, clustered
// with JetStream, and stops them when the test ends.
func clusterProcesses(t *testing.T, n int) []*natsNode {
	t.Helper()
	bin := natsServerBinary(t)
	nodes := make([]*natsNode, n)
	routes := make([]string, n)
	for i := range nodes {
		nodes[i] = &natsNode{name: fmt.Sprintf("n%d", i+1), client: freeAddr(t), route: freeAddr(t), dir: t.TempDir()}
		routes[i] = "nats://" + nodes[i].route
	}
	for _, nd := range nodes {
		nd.start(t, bin, strings.Join(routes, ","))
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.kill()
			if t.Failed() {
				t.Logf("node %s:\n%s", nd.name, nd.log.String())
			}
		}
	})
	return nodes
}

func (nd *natsNode) start(t *testing.T, bin, routes string) {
	t.Helper()
	host, port, _ := strings.Cut(nd.client, ":")
	nd.cmd = exec.Command(bin, "-a", host, "-p", port, "-n", nd.name, "-js", "-sd", nd.dir,
		"--cluster_name", "ponens-faults", "--cluster", "nats://"+nd.route, "--routes", routes)
	if nd.log == nil {
		nd.log = &bytes.Buffer{}
	}
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// kill ends the node's process with SIGKILL: a node lost, its storage kept.
func (nd *natsNode) kill() {
	if nd.cmd != nil {
		_ = nd.cmd.Process.Signal(syscall.SIGKILL)
		_ = nd.cmd.Wait()
		nd.cmd = nil
	}
}

// TestClusterProcessesFaults: three NATS server processes in a JetStream
// cluster with every stream and bucket on three replicas, a `ponens
// worker` process, and a publisher under load. A node is killed with
// SIGKILL while events keep coming, then started again; then the node
// leading the EVENTS stream is killed and started again. The verdicts
// stored equal those of an undisturbed run, run by run in stream order:
// none lost, none stored twice.
func TestClusterProcessesFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-process NATS cluster")
	}
	nodes := clusterProcesses(t, 3)
	urls := make([]string, len(nodes))
	for i, nd := range nodes {
		urls[i] = "nats://" + nd.client
	}
	url := strings.Join(urls, ",")
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub := schema.Subjects{Prefix: schema.DefaultPrefix, Partitions: schema.DefaultPartitions}
	cfg := transport.StreamConfig{Partitions: sub.Partitions, Duplicates: 2 * time.Minute, Replicas: 3}
	deadline := time.Now().Add(60 * time.Second)
	for err = transport.Provision(ctx, js, cfg); err != nil; err = transport.Provision(ctx, js, cfg) {
		if time.Now().After(deadline) {
			t.Fatalf("provisioning the streams on the cluster: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	runs := fleet.Generate(fleet.Config{Agents: 8, RunsPerAgent: 5, Steps: 14, Violations: 0.4, Seed: 17})
	events := fleet.Interleave(runs, 7)
	want := expectedPerRun(t, runs)
	total := 0
	for _, vs := range want {
		total += len(vs)
	}
	bin := ponensBinary(t)
	worker := exec.Command(bin, "worker", "--url", url, "--rules", "../../examples/rules", "--name", "w1")
	worker.Env = append(os.Environ(), "PONENS_NATS_REPLICAS=3", "PONENS_NATS_START_WAIT=60s")
	var wlog syncBuffer
	worker.Stdout, worker.Stderr = &wlog, &wlog
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Signal(syscall.SIGKILL)
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker:\n%s", wlog.String())
		}
	})

	pub := transport.NewPublisher(js, sub, transport.PublisherOptions{Timeout: 2 * time.Second, Retries: 60, RetryWait: 200 * time.Millisecond})
	publishAll := func(evs []*schema.Event) {
		for _, ev := range evs {
			if err := pub.Publish(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		info, err := js.Stream(ctx, schema.StreamVerdicts)
		if err != nil {
			return -1
		}
		return int(info.CachedInfo().State.Msgs)
	}
	routes := make([]string, len(nodes))
	for i, nd := range nodes {
		routes[i] = "nats://" + nd.route
	}
	restart := func(nd *natsNode) { nd.start(t, natsServerBinary(t), strings.Join(routes, ",")) }

	third := len(events) / 3
	publishAll(events[:third])
	nodes[0].kill()
	publishAll(events[third : 2*third])
	restart(nodes[0])

	var leader *natsNode
	for deadline := time.Now().Add(30 * time.Second); leader == nil && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		info, err := js.Stream(ctx, schema.StreamEvents)
		if err != nil || info.CachedInfo().Cluster == nil {
			continue
		}
		for _, nd := range nodes {
			if nd.name == info.CachedInfo().Cluster.Leader {
				leader = nd
			}
		}
	}
	if leader == nil {
		t.Fatal("no leader of EVENTS found")
	}
	leader.kill()
	publishAll(events[2*third:])
	restart(leader)

	for deadline := time.Now().Add(120 * time.Second); count() < total; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d verdicts stored, want %d", count(), total)
		}
	}
	time.Sleep(time.Second) // a duplicate stored would show up now
	got := storedPerRun(t, js, count())
	for run, vs := range want {
		if !slices.Equal(got[run], vs) {
			t.Errorf("run %s: verdicts in stream order\n%s\nwant\n%s", run, strings.Join(got[run], "\n"), strings.Join(vs, "\n"))
		}
	}
	if len(got) != len(want) || count() != total {
		t.Errorf("%d verdicts of %d runs stored, want %d of %d", count(), len(got), total, len(want))
	}
}
