package source

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/transport/jstest"
)

// ReadBatch returns at most BatchRows messages, in stream order, and an
// empty batch when none arrives in time; an acked batch is not delivered
// again, a nak'ed one is, and a batch neither acked nor nak'ed comes again
// after the ack wait, to a reader on the same durable consumer.
func TestReadBatchAckNak(t *testing.T) {
	_, _, js := jstest.Start(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx, "s.x", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *Source {
		s, err := Open(ctx, js, Options{Stream: "S", Durable: "d", BatchRows: 4, AckWait: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	read := func(want string) Batch {
		t.Helper()
		b, err := s.ReadBatch(ctx, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, m := range b.Msgs {
			got += string(m.Data())
		}
		if got != want {
			t.Fatalf("batch %q, want %q", got, want)
		}
		return b
	}
	if err := read("0123").Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := read("4567").Nak(0); err != nil {
		t.Fatal(err)
	}
	// Handed back: 4 to 7 come again, with 8 and 9, in some order.
	var again []string
	for range 5 {
		b, err := s.ReadBatch(ctx, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range b.Msgs {
			again = append(again, string(m.Data()))
		}
		if err := b.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(again)
	if got := strings.Join(again, ""); got != "456789" {
		t.Fatalf("after the nak: %q, want 4 to 9 once each", got)
	}
	for _, d := range []string{"a", "b"} {
		if _, err := js.Publish(ctx, "s.x", []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	b := read("ab")
	if b.Lag() != 0 {
		t.Errorf("lag %d after the last message, want 0", b.Lag())
	}
	s = open() // a reader that died holding a and b: another takes over
	read("")   // nothing before the ack wait
	time.Sleep(3 * time.Second)
	if err := read("ab").Ack(ctx); err != nil {
		t.Fatal(err)
	}
	read("")
}

// An eager source returns the messages that are there without waiting for
// its batch to fill, at most BatchRows of them; with nothing there, it
// returns with the first message that comes, and what came with it. The
// read's wait (20 s) is far beyond what either takes: a source that waits
// for a full batch returns only when it expires.
func TestEagerReadBatch(t *testing.T) {
	_, _, js := jstest.Start(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish := func(n int) {
		for i := range n {
			if _, err := js.Publish(ctx, "s.x", fmt.Appendf(nil, "%d", i)); err != nil {
				t.Error(err)
			}
		}
	}
	s, err := Open(ctx, js, Options{Stream: "S", Durable: "d", BatchRows: 100, Eager: true})
	if err != nil {
		t.Fatal(err)
	}
	const wait = 20 * time.Second
	// read reads batches until want messages have come. A message the
	// server has stored may reach the consumer a moment later, so a batch
	// may hold fewer than were published; what matters is that no read
	// waits for a full batch or for its time-out.
	read := func(want int) {
		t.Helper()
		for got := 0; got < want; {
			began := time.Now()
			b, err := s.ReadBatch(ctx, wait)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			if len(b.Msgs) == 0 || len(b.Msgs) > 100 || took >= wait/2 {
				t.Fatalf("%d messages after %s (%d of %d read), want some, at most a batch, without waiting for a full batch", len(b.Msgs), took, got, want)
			}
			if err := b.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			got += len(b.Msgs)
			if got > want {
				t.Fatalf("read %d messages, %d were published", got, want)
			}
		}
	}
	publish(3)
	read(3)
	publish(150)
	read(150)
	go func() { time.Sleep(200 * time.Millisecond); publish(1) }()
	read(1)
}
