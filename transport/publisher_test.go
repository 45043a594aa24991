package transport_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestPartitions publishes three events of each of many runs, some of
// whose runIds need base64 tokens, and checks that each run's events are
// stored under one subject, on the partition schema.Subjects.PartitionOf
// computes: the server's partition() transform and PartitionOf agree.
func TestPartitions(t *testing.T) {
	for _, parts := range []int{16, 7} {
		t.Run(strconv.Itoa(parts), func(t *testing.T) {
			cfg := transport.StreamConfig{Prefix: "p" + strconv.Itoa(parts), Partitions: parts, Memory: true}
			_, _, js := jstest.Start(t) // stream names are not prefixed: a server each
			provision(t, js, cfg)
			subj := cfg.Subjects()
			p := transport.NewPublisher(js, subj, transport.PublisherOptions{})
			runs := runIDs(300)
			for _, run := range runs {
				for seq := uint64(1); seq <= 3; seq++ {
					if err := p.Publish(ctxT(t), event(run, seq)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			got := subjectCounts(t, js)
			if len(got) != len(runs) {
				t.Errorf("%d subjects stored, want %d", len(got), len(runs))
			}
			used := map[int]bool{}
			for _, run := range runs {
				k := subj.PartitionOf(run)
				used[k] = true
				want := fmt.Sprintf("%s.events.p.%d.%s", subj.Prefix, k, schema.RunToken(run))
				if got[want] != 3 {
					t.Errorf("run %q: %d events on %s, want 3 (stored subjects of the run: %v)", run, got[want], want, subjectsOf(got, schema.RunToken(run)))
				}
			}
			if len(used) != parts {
				t.Errorf("%d partitions used, want %d", len(used), parts)
			}
		})
	}
}

// subjectsOf lists the stored subjects ending in token.
func subjectsOf(counts map[string]uint64, token string) []string {
	var out []string
	for s := range counts {
		if strings.HasSuffix(s, "."+token) {
			out = append(out, s)
		}
	}
	return out
}

func TestPublishTwiceStoresOnce(t *testing.T) {
	_, _, js := jstest.Start(t)
	provision(t, js, testStreams)
	p := transport.NewPublisher(js, testStreams.Subjects(), transport.PublisherOptions{})
	defer p.Close()
	for range 2 {
		if err := p.Publish(ctxT(t), event("run a", 1)); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamMsgs(t, js, schema.StreamEvents); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
	if st := p.Stats(); st.Stored != 1 || st.Duplicates != 1 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
	msgs := readAll(t, js, schema.StreamEvents)
	if id := msgs[0].Headers().Get(natsjs.MsgIDHeader); id != schema.EventMsgID("run a", 1) {
		t.Errorf("Nats-Msg-Id %q", id)
	}
}

// TestRetryAfterLostAck loses the acknowledgement of every first attempt
// (the message is stored, the publisher never hears of it): each event is
// sent again after the timeout, with the same message id, and stored once.
// A second publisher sending the same events at the same time adds nothing.
func TestRetryAfterLostAck(t *testing.T) {
	_, _, js := jstest.Start(t)
	provision(t, js, testStreams)
	lossy := newGatedJS(js, true, true)
	opts := transport.PublisherOptions{Timeout: 100 * time.Millisecond, RetryWait: time.Millisecond, MaxInFlight: 64}
	p := transport.NewPublisher(lossy, testStreams.Subjects(), opts)
	q := transport.NewPublisher(js, testStreams.Subjects(), opts)
	const n = 50
	var wg sync.WaitGroup
	for _, pub := range []*transport.Publisher{p, q} {
		wg.Go(func() {
			for i := range n {
				if err := pub.Publish(ctxT(t), event(fmt.Sprintf("run-%d", i%5), uint64(i/5+1))); err != nil {
					t.Error(err)
				}
			}
			if err := pub.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := streamMsgs(t, js, schema.StreamEvents); got != n {
		t.Errorf("%d messages stored, want %d", got, n)
	}
	st := p.Stats()
	if st.Retries != n || st.Stored != 0 || st.Duplicates != n || st.Failed != 0 {
		t.Errorf("lossy publisher stats %+v, want %d retries and %d duplicates", st, n, n)
	}
}

// TestRestart restarts the server while events are being published: the
// unacknowledged ones are sent again after the reconnection, and every
// event is stored exactly once.
func TestRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	listen := s.Addr().String()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	_, js := jstest.Connect(t, s.ClientURL())
	provision(t, js, testStreams)
	p := transport.NewPublisher(js, testStreams.Subjects(), transport.PublisherOptions{Timeout: time.Second, Retries: 20, RetryWait: 20 * time.Millisecond})

	const runs, perRun = 20, 150
	published := make(chan error, 1)
	go func() {
		for seq := uint64(1); seq <= perRun; seq++ {
			for r := range runs {
				if err := p.Publish(ctxT(t), event(fmt.Sprintf("run-%d", r), seq)); err != nil {
					published <- err
					return
				}
			}
		}
		published <- p.Close()
	}()
	waitFor(t, "some events stored", func() bool { return p.Stats().Stored >= runs*perRun/4 })
	s.Shutdown()
	s.WaitForShutdown()
	s, err = transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: dir, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	msgs := readAll(t, js, schema.StreamEvents)
	seen := map[string]bool{}
	for _, m := range msgs {
		id := m.Headers().Get(natsjs.MsgIDHeader)
		if seen[id] {
			t.Errorf("%s stored twice", id)
		}
		seen[id] = true
	}
	if len(seen) != runs*perRun {
		t.Errorf("%d distinct events stored, want %d", len(seen), runs*perRun)
	}
	t.Logf("stats after the restart: %+v", p.Stats())
}

func TestBoundedInFlight(t *testing.T) {
	_, _, js := jstest.Start(t)
	provision(t, js, testStreams)
	gated := newGatedJS(js, false, false)
	p := transport.NewPublisher(gated, testStreams.Subjects(), transport.PublisherOptions{MaxInFlight: 4, Timeout: 10 * time.Second})
	done := make(chan error, 1)
	go func() {
		for seq := uint64(1); seq <= 10; seq++ {
			if err := p.Publish(ctxT(t), event("run-a", seq)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitFor(t, "4 events in flight", func() bool { out, _ := gated.stats(); return out == 4 })
	// Full: a Publish whose context has ended gives up instead of sending.
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Publish(canceled, event("run-b", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with 4 in flight = %v, want context.Canceled", err)
	}
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelFlush()
	if err := p.Flush(flushCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with acknowledgements held = %v, want DeadlineExceeded", err)
	}
	close(gated.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, maxOut := gated.stats(); maxOut != 4 {
		t.Errorf("at most %d in flight, want 4", maxOut)
	}
	if n := streamMsgs(t, js, schema.StreamEvents); n != 10 {
		t.Errorf("%d stored, want 10", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctxT(t), event("run-a", 11)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Publish after Close = %v", err)
	}
}

// TestFlushErrors makes the server refuse the events (another stream than
// EVENTS listens on their subjects): Flush reports the first failure once,
// Publish refuses invalid and oversize events at once, and PublishBatch
// reports each event's outcome.
func TestFlushErrors(t *testing.T) {
	_, nc, js := jstest.Start(t)
	subj := testStreams.Subjects()
	if _, err := js.CreateStream(ctxT(t), natsjs.StreamConfig{Name: "OTHER", Subjects: []string{subj.EventsIn()}, Storage: natsjs.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	p := transport.NewPublisher(js, subj, transport.PublisherOptions{Retries: 2, RetryWait: time.Millisecond})
	defer p.Close()
	for seq := uint64(1); seq <= 3; seq++ {
		if err := p.Publish(ctxT(t), event("run-a", seq)); err != nil {
			t.Fatal(err)
		}
	}
	err := p.Flush(ctxT(t))
	var pe *transport.PublishError
	var api *natsjs.APIError
	if !errors.As(err, &pe) || pe.RunID != "run-a" || pe.Seq != 1 || pe.Attempts != 1 || !errors.As(err, &api) {
		t.Fatalf("Flush = %v, want the refusal of seq 1 after one attempt", err)
	}
	if err := p.Flush(ctxT(t)); err != nil {
		t.Errorf("second Flush = %v, want nil", err)
	}
	if st := p.Stats(); st.Failed != 3 {
		t.Errorf("stats %+v", st)
	}

	bad := event("run-a", 4)
	bad.Action.Type = ""
	var fe *schema.FieldError
	if err := p.Publish(ctxT(t), bad); !errors.As(err, &fe) || fe.Field != "action.type" {
		t.Errorf("invalid event: %v", err)
	}
	big := event("run-a", 5)
	big.Action.Detail = strings.Repeat("x", int(nc.MaxPayload()))
	if err := p.Publish(ctxT(t), big); !errors.Is(err, schema.ErrTooLarge) {
		t.Errorf("oversize event: %v", err)
	}

	errs := p.PublishBatch(ctxT(t), []*schema.Event{event("run-b", 1), bad})
	if !errors.As(errs[0], &api) || !errors.As(errs[1], &fe) {
		t.Errorf("PublishBatch = %v", errs)
	}
	if err := p.Flush(ctxT(t)); err != nil {
		t.Errorf("Flush after PublishBatch = %v, want nil: batch failures are the batch's", err)
	}
}

func TestPublishBatch(t *testing.T) {
	_, _, js := jstest.Start(t)
	provision(t, js, testStreams)
	p := transport.NewPublisher(js, testStreams.Subjects(), transport.PublisherOptions{MaxInFlight: 8})
	defer p.Close()
	var events []*schema.Event
	for seq := uint64(1); seq <= 40; seq++ {
		events = append(events, event("run-a", seq))
	}
	for _, err := range p.PublishBatch(ctxT(t), events) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Stored when PublishBatch returns, without a Flush.
	if n := streamMsgs(t, js, schema.StreamEvents); n != 40 {
		t.Errorf("%d stored, want 40", n)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for i, err := range p.PublishBatch(canceled, events[:3]) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("event %d with an ended context: %v", i, err)
		}
	}
}

// TestCluster publishes to a three-node cluster with three replicas, stops
// a node, and publishes more: nothing is lost or duplicated.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := jstest.Cluster(t, 3)
	_, js := c.Connect()
	cfg := testStreams
	cfg.Replicas = 3
	provision(t, js, cfg)
	p := transport.NewPublisher(js, cfg.Subjects(), transport.PublisherOptions{Timeout: 2 * time.Second, Retries: 20, RetryWait: 50 * time.Millisecond})
	publish := func(from, to uint64) {
		for seq := from; seq <= to; seq++ {
			if err := p.Publish(ctxT(t), event("run-"+strconv.Itoa(int(seq%7)), seq)); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	publish(1, 200)
	c.Stop(0)
	publish(201, 400)
	c.Restart(0)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "400 events", func() bool {
		s, err := js.Stream(context.Background(), schema.StreamEvents)
		if err != nil {
			return false
		}
		info, err := s.Info(context.Background())
		return err == nil && info.State.Msgs == 400
	})
}

// TestCloseContextAbandons: with acknowledgements that never come (the
// server gone), CloseContext stops waiting when its context ends and
// reports each event still open as abandoned, instead of waiting every
// attempt of every event out.
func TestCloseContextAbandons(t *testing.T) {
	_, _, js := jstest.Start(t)
	provision(t, js, testStreams)
	stuck := newGatedJS(js, false, false) // acknowledgements held back
	p := transport.NewPublisher(stuck, testStreams.Subjects(), transport.PublisherOptions{Timeout: time.Hour})
	const n = 20
	var mu sync.Mutex
	outcomes := map[uint64]error{}
	for seq := uint64(1); seq <= n; seq++ {
		err := p.PublishReport(ctxT(t), event("stuck", seq), func(err error) {
			mu.Lock()
			outcomes[seq] = err
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.CloseContext(ctx); err != nil {
		t.Errorf("CloseContext = %v; the failures were PublishReport's to report", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != n {
		t.Fatalf("%d outcomes reported, want %d", len(outcomes), n)
	}
	for seq, err := range outcomes {
		var pe *transport.PublishError
		if !errors.Is(err, transport.ErrAbandoned) || !errors.As(err, &pe) || pe.Seq != seq {
			t.Errorf("seq %d: outcome %v, want a PublishError of seq %d wrapping ErrAbandoned", seq, err, seq)
		}
	}
	if st := p.Stats(); st.Failed != n {
		t.Errorf("stats %+v, want %d failed", st, n)
	}
}
