package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestWorkerProcessCrash: a real `ponens worker` process is killed with
// SIGKILL in the middle of a fleet's stream; a second process takes its
// partitions over; the verdicts stream ends up exactly as an uninterrupted
// run makes it — no verdict lost, none duplicated.
func TestWorkerProcessCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs worker processes")
	}
	bin := ponensBinary(t)
	srv, _, js := jstest.Start(t)
	ctx := context.Background()
	sub := schema.Subjects{Prefix: schema.DefaultPrefix, Partitions: schema.DefaultPartitions}
	if err := transport.Provision(ctx, js, transport.StreamConfig{Partitions: sub.Partitions, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	runs := fleet.Generate(fleet.Config{Agents: 6, RunsPerAgent: 5, Steps: 14, Violations: 0.4, Seed: 3})
	events := fleet.Interleave(runs, 3)
	want := expectedVerdicts(t, runs)

	pub := transport.NewPublisher(js, sub, transport.PublisherOptions{})
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
	startWorker := func(name string) *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--url", srv.ClientURL(), "--rules", "../../examples/rules", "--name", name)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("worker %s:\n%s", name, log.String())
			}
		})
		return cmd
	}
	count := func() int {
		info, err := js.Stream(ctx, schema.StreamVerdicts)
		if err != nil {
			return 0
		}
		return int(info.CachedInfo().State.Msgs)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (%d verdicts stored, want %d)", what, count(), len(want))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	half := len(events) / 2
	publishAll(events[:half])
	a := startWorker("a")
	wait("worker a to store verdicts", func() bool { return count() > 0 })
	time.Sleep(700 * time.Millisecond) // past some checkpoints, with verdicts after the last
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	killedAt := count()
	publishAll(events[half:])
	startWorker("b")
	wait("all verdicts", func() bool { return count() >= len(want) })
	time.Sleep(time.Second) // a duplicate would show up now
	if killedAt >= len(want) {
		t.Fatalf("worker a had finished everything before it was killed (%d verdicts): the test proves nothing", killedAt)
	}
	got := storedVerdicts(t, js, count())
	if !slices.Equal(got, want) {
		t.Fatalf("verdicts after the crash differ from an uninterrupted run: %d stored, %d expected", len(got), len(want))
	}
}

// expectedVerdicts is what a local monitor emits for the runs, run after
// run (runs that never close are not ended: in the test they stay open).
func expectedVerdicts(t *testing.T, runs []fleet.Run) []string {
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	eng, _ := monitor.NewEngine(set)
	var out []string
	for _, r := range runs {
		run := eng.NewRun(r.ID)
		for i := range r.Events {
			vs, err := run.Add(&r.Events[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				b, _ := json.Marshal(v)
				out = append(out, string(b))
			}
		}
	}
	slices.Sort(out)
	return out
}

// storedVerdicts reads n verdicts from the stream, sorted for comparison.
func storedVerdicts(t *testing.T, js natsjs.JetStream, n int) []string {
	c, err := js.OrderedConsumer(context.Background(), schema.StreamVerdicts, natsjs.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for range n {
		m, err := c.Next(natsjs.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Data()))
	}
	slices.Sort(out)
	return out
}

// TestWorkersKilledBeforeCheckpoint: a `ponens worker` process is killed
// with SIGKILL after it published verdicts but before its first
// checkpoint, so the two workers that take its partitions over process
// those events again and send their verdicts again; then a fourth starts
// and the two are killed, so partitions move twice more.
// Every verdict published on the subjects is counted as well as those
// stored: the difference, the duplicates JetStream removed by message id,
// must not be zero (the path this test exists for was taken), and the
// stored verdicts must equal an uninterrupted run's, run by run in order.
func TestWorkersKilledBeforeCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs worker processes")
	}
	bin := ponensBinary(t)
	srv, nc, js := jstest.Start(t)
	ctx := context.Background()
	sub := schema.Subjects{Prefix: schema.DefaultPrefix, Partitions: schema.DefaultPartitions}
	if err := transport.Provision(ctx, js, transport.StreamConfig{Partitions: sub.Partitions, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	var published atomic.Int64 // every verdict sent, stored or not
	s, err := nc.Subscribe(sub.VerdictsIn(), func(*nats.Msg) { published.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unsubscribe()
	runs := fleet.Generate(fleet.Config{Agents: 6, RunsPerAgent: 6, Steps: 14, Violations: 0.4, Seed: 11})
	events := fleet.Interleave(runs, 5)
	want := expectedPerRun(t, runs)
	total := 0
	for _, vs := range want {
		total += len(vs)
	}

	pub := transport.NewPublisher(js, sub, transport.PublisherOptions{})
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
	// Checkpoints far apart (within the lease, as config requires), so a
	// kill soon after the first verdicts comes before any checkpoint.
	env := []string{"PONENS_WORKER_CHECKPOINT_EVERY=2500ms", "PONENS_WORKER_LEASE_TTL=3s"}
	startWorker := func(name string) *exec.Cmd {
		cmd := exec.Command(bin, "worker", "--url", srv.ClientURL(), "--rules", "../../examples/rules", "--name", name)
		cmd.Env = append(os.Environ(), env...)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("worker %s:\n%s", name, log.String())
			}
		})
		return cmd
	}
	kill := func(c *exec.Cmd) {
		if err := c.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = c.Wait()
	}
	count := func() int {
		info, err := js.Stream(ctx, schema.StreamVerdicts)
		if err != nil {
			return 0
		}
		return int(info.CachedInfo().State.Msgs)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (%d verdicts stored, want %d)", what, count(), total)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	a := startWorker("a")
	third := len(events) / 3
	publishAll(events[:third])
	wait("the first verdicts", func() bool { return count() > 0 })
	time.Sleep(300 * time.Millisecond) // more verdicts out, no checkpoint yet
	kill(a)
	killedAt := count()
	b, c := startWorker("b"), startWorker("c")
	publishAll(events[third : 2*third])
	startWorker("d")
	time.Sleep(4 * time.Second) // a's partitions taken over past its lease
	kill(b)
	kill(c)
	publishAll(events[2*third:])
	wait("all verdicts", func() bool { return count() >= total })
	time.Sleep(time.Second) // a duplicate stored would show up now

	if killedAt >= total {
		t.Fatalf("every verdict was stored before the first kill (%d): the test proves nothing", killedAt)
	}
	got := storedPerRun(t, js, count())
	for run, vs := range want {
		if !slices.Equal(got[run], vs) {
			t.Errorf("run %s: verdicts in stream order\n%s\nwant\n%s", run, strings.Join(got[run], "\n"), strings.Join(vs, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d runs have verdicts, want %d", len(got), len(want))
	}
	dups := int(published.Load()) - count()
	t.Logf("%d verdicts stored; %d published, of which %d were duplicates removed by their message id", count(), published.Load(), dups)
	if dups <= 0 {
		t.Errorf("no verdict was sent twice (%d published, %d stored): the takeover replayed nothing, so the test did not exercise duplicate removal", published.Load(), count())
	}
}

// expectedPerRun is what a local monitor emits for each run, in order.
func expectedPerRun(t *testing.T, runs []fleet.Run) map[string][]string {
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	eng, _ := monitor.NewEngine(set)
	out := map[string][]string{}
	for _, r := range runs {
		run := eng.NewRun(r.ID)
		for i := range r.Events {
			vs, err := run.Add(&r.Events[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				b, _ := json.Marshal(v)
				out[r.ID] = append(out[r.ID], string(b))
			}
		}
	}
	return out
}

// storedPerRun reads n verdicts from the stream and groups them by run,
// keeping stream order within each run. On a cluster electing a leader it
// reads again from where it stopped.
func storedPerRun(t *testing.T, js natsjs.JetStream, n int) map[string][]string {
	out := map[string][]string{}
	var next uint64 = 1 // stream sequence to read from
	read := 0
	deadline := time.Now().Add(30 * time.Second)
	for read < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d verdicts", read, n)
		}
		c, err := js.OrderedConsumer(context.Background(), schema.StreamVerdicts, natsjs.OrderedConsumerConfig{
			DeliverPolicy: natsjs.DeliverByStartSequencePolicy, OptStartSeq: next})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for read < n {
			m, err := c.Next(natsjs.FetchMaxWait(5 * time.Second))
			if err != nil {
				break
			}
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				RunID string `json:"runId"`
			}
			if err := json.Unmarshal(m.Data(), &v); err != nil {
				t.Fatal(err)
			}
			out[v.RunID] = append(out[v.RunID], string(m.Data()))
			next = md.Sequence.Stream + 1
			read++
		}
	}
	return out
}
