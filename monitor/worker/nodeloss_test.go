package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestNodeLoss: the pipeline on a three-node NATS cluster, streams and
// buckets with three replicas. A node stops in the middle of the stream;
// the worker rides through the reconnection and the leader elections
// (partitions that fail start again from their checkpoints) and the
// verdicts stream ends up exactly as after an uninterrupted run.
func TestNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := jstest.Cluster(t, 3)
	nc, js := c.Connect()
	ctx := context.Background()
	cfg := transport.StreamConfig{Prefix: subjects.Prefix, Partitions: testPartitions, Duplicates: 10 * time.Minute, Replicas: 3}
	if err := transport.Provision(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	set := rules(t)
	runs, order, _ := fleet(30)
	want := expected(t, set, runs)
	pub := transport.NewPublisher(js, subjects, transport.PublisherOptions{Timeout: 2 * time.Second, Retries: 40, RetryWait: 100 * time.Millisecond})
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
	w, err := New(nc, js, Options{ID: "w", Subjects: subjects, Rules: set, LeaseTTL: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), Replicas: 3,
		CheckpointEvery: 50 * time.Millisecond, IdleAfter: 3 * time.Second, GapTimeout: time.Minute, DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(wctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()

	half := len(order) / 2
	publishAll(order[:half])
	waitFor(t, 90*time.Second, "the first half's verdicts", func() bool { return verdictCount(js) > 0 && len(w.Owned()) == testPartitions })
	c.Stop(0)
	publishAll(order[half:])
	waitFor(t, 90*time.Second, "all verdicts", func() bool { return verdictCount(js) >= total(want) })
	time.Sleep(time.Second) // anything extra would show up now
	var got map[string][]string
	var n int
	var readErr error
	waitFor(t, 30*time.Second, "the verdicts stream read back", func() bool { // reads can find no responders while the cluster settles
		got, n, readErr = readVerdicts(js)
		return readErr == nil
	})
	sameVerdicts(t, got, n, want)
}
