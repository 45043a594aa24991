package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options says which stream a Source reads, and as which consumer.
type Options struct {
	// Stream is the stream's name.
	Stream string
	// Durable names the consumer; its place in the stream survives
	// restarts of the reader and of the server.
	Durable string
	// Filter is the subject filter (empty: the whole stream).
	Filter string
	// BatchRows is the most messages one ReadBatch returns.
	BatchRows int
	// AckWait is how long the server waits for a batch's ack before it
	// delivers the batch again (default 30s): it must exceed the longest
	// write of a batch.
	AckWait time.Duration
	// Eager makes ReadBatch return as soon as a message is there, with the
	// messages there then (at most BatchRows), instead of waiting for a
	// full batch: for a reader whose latency matters more than the size of
	// its batches (the alert stage).
	Eager bool
}

// Source reads one stream in batches. It is not safe for concurrent use.
type Source struct {
	o Options
	c jetstream.Consumer
}

// Open creates the durable consumer, or takes up the existing one, and
// returns a Source on it. The consumer acknowledges each message
// explicitly and allows two batches in flight, so a batch handed back is
// not held up behind the next one.
func Open(ctx context.Context, js jetstream.JetStream, o Options) (*Source, error) {
	if o.BatchRows < 1 {
		return nil, fmt.Errorf("source %s: batch rows must be at least 1, got %d", o.Stream, o.BatchRows)
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       o.Durable,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxAckPending: 2 * o.BatchRows,
		FilterSubject: o.Filter,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	c, err := js.CreateOrUpdateConsumer(ctx, o.Stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("source %s: consumer %s: %w", o.Stream, o.Durable, err)
	}
	return &Source{o: o, c: c}, nil
}

// Batch is the messages of one ReadBatch, in stream order.
type Batch struct {
	Msgs []jetstream.Msg
}

// ReadBatch returns the messages that arrive within wait, at most
// BatchRows of them, and returns as soon as it has BatchRows. A batch
// with no message is not an error. It returns ctx's error when ctx ends.
//
// The pull request expires on the server (FetchMaxWait), not by cancelling
// it in the client: messages the server delivered to a request the client
// had given up on would wait out the ack wait before coming again.
//
// An eager Source asks for what is there at once (FetchNoWait); when
// nothing is, it waits up to wait for one message, then takes what came
// with it.
func (s *Source) ReadBatch(ctx context.Context, wait time.Duration) (Batch, error) {
	if err := ctx.Err(); err != nil {
		return Batch{}, err
	}
	if !s.o.Eager {
		return s.fetch(ctx, func() (jetstream.MessageBatch, error) {
			return s.c.Fetch(s.o.BatchRows, jetstream.FetchMaxWait(max(wait, time.Millisecond)))
		})
	}
	b, err := s.fetch(ctx, func() (jetstream.MessageBatch, error) { return s.c.FetchNoWait(s.o.BatchRows) })
	if err != nil || len(b.Msgs) > 0 || s.o.BatchRows == 1 {
		return b, err
	}
	b, err = s.fetch(ctx, func() (jetstream.MessageBatch, error) {
		return s.c.Fetch(1, jetstream.FetchMaxWait(max(wait, time.Millisecond)))
	})
	if err != nil || len(b.Msgs) == 0 {
		return b, err
	}
	more, err := s.fetch(ctx, func() (jetstream.MessageBatch, error) { return s.c.FetchNoWait(s.o.BatchRows - 1) })
	b.Msgs = append(b.Msgs, more.Msgs...)
	if err != nil && ctx.Err() == nil {
		err = nil // the first message is kept; the next read tries again
	}
	return b, err
}

// fetch reads the messages of one pull request made by pull.
func (s *Source) fetch(ctx context.Context, pull func() (jetstream.MessageBatch, error)) (Batch, error) {
	mb, err := pull()
	if err != nil {
		if ctx.Err() != nil {
			return Batch{}, ctx.Err()
		}
		return Batch{}, fmt.Errorf("source %s: fetch: %w", s.o.Stream, err)
	}
	var b Batch
	for m := range mb.Messages() {
		b.Msgs = append(b.Msgs, m)
	}
	if err := mb.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		if ctx.Err() != nil {
			return b, ctx.Err()
		}
		// The messages read are kept: the caller writes and acks them,
		// and the rest is delivered again after the ack wait.
		if len(b.Msgs) == 0 {
			return b, fmt.Errorf("source %s: fetch: %w", s.o.Stream, err)
		}
	}
	return b, nil
}

// Ack acknowledges every message of the batch, after its write committed.
// It returns once the server confirmed the last ack: the acks go out in
// order on one connection, so by then the server has every one of them.
func (b Batch) Ack(ctx context.Context) error {
	if len(b.Msgs) == 0 {
		return nil
	}
	last := len(b.Msgs) - 1
	for _, m := range b.Msgs[:last] {
		if err := m.Ack(); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
	}
	if err := b.Msgs[last].DoubleAck(ctx); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return nil
}

// Nak hands the batch back after a failed write: the server delivers its
// messages again after delay.
func (b Batch) Nak(delay time.Duration) error {
	for _, m := range b.Msgs {
		if err := m.NakWithDelay(delay); err != nil {
			return fmt.Errorf("nak: %w", err)
		}
	}
	return nil
}

// Backlog asks the server how many messages of the stream the consumer
// has not had acknowledged: those not yet delivered and those delivered
// but neither acknowledged nor given up on (a batch handed back waits among
// them).
func (s *Source) Backlog(ctx context.Context) (uint64, error) {
	info, err := s.c.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("source %s: consumer info: %w", s.o.Stream, err)
	}
	return info.NumPending + uint64(info.NumAckPending), nil
}

// Lag is how many messages of the stream the consumer had yet to be
// delivered when the batch's last message was: what the reader is behind.
func (b Batch) Lag() uint64 {
	if len(b.Msgs) == 0 {
		return 0
	}
	md, err := b.Msgs[len(b.Msgs)-1].Metadata()
	if err != nil {
		return 0
	}
	return md.NumPending
}
