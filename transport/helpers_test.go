package transport_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// testStreams is the stream configuration of the tests: 16 partitions.
var testStreams = transport.StreamConfig{Prefix: "ponens", Partitions: 16, Duplicates: time.Minute}

// provision sets up the streams of cfg or fails the test.
func provision(t testing.TB, js natsjs.JetStream, cfg transport.StreamConfig) {
	t.Helper()
	if err := transport.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
}

// event returns a valid action event of run at seq.
func event(run string, seq uint64) *schema.Event {
	return &schema.Event{
		V: schema.EnvelopeVersion, RunID: run, Seq: seq,
		TS:     time.Date(2025, 10, 2, 8, 0, 0, 0, time.UTC),
		Type:   schema.TypeAction,
		Action: &schema.Action{ID: int64(seq), Type: "ReadFile"},
	}
}

// ctxT is a context that ends with the test or after 30 seconds.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// streamMsgs returns the number of messages in stream.
func streamMsgs(t testing.TB, js natsjs.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// subjectCounts returns the stored subjects of EVENTS with their counts.
func subjectCounts(t testing.TB, js natsjs.JetStream) map[string]uint64 {
	t.Helper()
	return jstest.SubjectCounts(t, js, schema.StreamEvents)
}

// readAll returns every message of stream, in stream order.
func readAll(t testing.TB, js natsjs.JetStream, stream string) []natsjs.Msg {
	t.Helper()
	return jstest.Messages(t, js, stream)
}

// waitFor polls cond every 10ms until it holds, failing the test after 10s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gatedJS is a JetStream whose asynchronous publishes really go to the
// server but whose acknowledgements reach the caller only once the gate is
// open, and, with lose set, never for the first attempt of each message id
// (the message is stored, its acknowledgement lost).
type gatedJS struct {
	natsjs.JetStream
	gate chan struct{}
	lose bool

	mu          sync.Mutex
	seen        map[string]int
	outstanding int
	maxOut      int
}

func newGatedJS(js natsjs.JetStream, open, lose bool) *gatedJS {
	g := &gatedJS{JetStream: js, gate: make(chan struct{}), lose: lose, seen: map[string]int{}}
	if open {
		close(g.gate)
	}
	return g
}

func (g *gatedJS) PublishMsgAsync(m *nats.Msg, opts ...natsjs.PublishOpt) (natsjs.PubAckFuture, error) {
	real, err := g.JetStream.PublishMsgAsync(m, opts...)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	id := m.Header.Get(natsjs.MsgIDHeader)
	g.seen[id]++
	lost := g.lose && g.seen[id] == 1
	g.outstanding++
	g.maxOut = max(g.maxOut, g.outstanding)
	g.mu.Unlock()
	f := &gatedFuture{real: real, ok: make(chan *natsjs.PubAck, 1), err: make(chan error, 1)}
	go func() {
		<-g.gate
		var ack *natsjs.PubAck
		var err error
		select {
		case ack = <-real.Ok():
		case err = <-real.Err():
		}
		g.mu.Lock()
		g.outstanding--
		g.mu.Unlock()
		if lost {
			return
		}
		if err != nil {
			f.err <- err
		} else {
			f.ok <- ack
		}
	}()
	return f, nil
}

func (g *gatedJS) stats() (outstanding, maxOut int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.outstanding, g.maxOut
}

type gatedFuture struct {
	real natsjs.PubAckFuture
	ok   chan *natsjs.PubAck
	err  chan error
}

func (f *gatedFuture) Ok() <-chan *natsjs.PubAck { return f.ok }
func (f *gatedFuture) Err() <-chan error         { return f.err }
func (f *gatedFuture) Msg() *nats.Msg            { return f.real.Msg() }

// runIDs returns n runIds, among them ones that need base64 tokens.
func runIDs(n int) []string {
	ids := []string{"run-a", "p", "~tilde", "a.b", "a b", "a\n", "a ", " a", "*", ">", "ünï", "x/y:z", "long-" + fmt.Sprintf("%0251d", 7)}
	for i := 0; len(ids) < n; i++ {
		if i%3 == 0 {
			ids = append(ids, fmt.Sprintf("run.%d", i))
		} else {
			ids = append(ids, fmt.Sprintf("run-%d", i))
		}
	}
	return ids[:n]
}

func itoa(n int) string { return fmt.Sprint(n) }
