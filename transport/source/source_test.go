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
