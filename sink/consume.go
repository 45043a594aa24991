package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/source"
)

// Kind is what the messages of a stream are.
type Kind string

// The kinds of stream a sink stores.
const (
	Verdicts Kind = "verdicts"
	Events   Kind = "events"
)

// Options tunes a sink.
type Options struct {
	// BatchRows is the most messages written in one commit.
	BatchRows int
	// FlushEvery is the longest a message waits for its batch to fill.
	FlushEvery time.Duration
	// RetryAfter is how long a batch whose commit failed waits before it
	// is delivered again (default 1s).
	RetryAfter time.Duration
	// AckWait is how long a batch read but not acknowledged (its reader
	// died) waits before it is delivered again (default 30s).
	AckWait time.Duration
	// Logger logs skipped messages and failed commits (default: discard).
	Logger *slog.Logger
	// Stats, when set, counts what the sink did.
	Stats *Stats
	// Metrics, when set, are the sink's Prometheus metrics.
	Metrics *Metrics
}

// Stats counts what a sink did, per kind of stream; its fields may be read
// while the sink runs.
type Stats struct {
	Batches, Rows, Skipped, Retries atomic.Uint64
	// Lag is the messages the last batch's consumer had yet to read.
	Lag atomic.Uint64
}

func (o *Options) defaults() {
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stats == nil {
		o.Stats = new(Stats)
	}
}

// FromStreams stores the VERDICTS and EVENTS streams of sub into st until
// ctx ends, each on its own durable consumer (<prefix>-store-verdicts,
// <prefix>-store-events) and goroutine. It returns nil when ctx ends, and
// an error when a consumer cannot be made.
func FromStreams(ctx context.Context, js jetstream.JetStream, sub schema.Subjects, st Appendable, o Options) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range []struct {
		kind   Kind
		stream string
	}{{Verdicts, schema.StreamVerdicts}, {Events, schema.StreamEvents}} {
		src, err := source.Open(ctx, js, source.Options{Stream: s.stream, Durable: sub.Prefix + "-store-" + string(s.kind), BatchRows: o.BatchRows, AckWait: o.AckWait})
		if err != nil {
			return err
		}
		g.Go(func() error { return Consume(gctx, src, s.kind, st, o) })
	}
	return g.Wait()
}

// Consume reads batches from src and writes each into st as kind, until
// ctx ends. A batch is acknowledged only after its commit: a commit that
// fails is rolled back and the batch handed back, to be delivered again
// after RetryAfter; a crash before the ack delivers it again too. A
// message that does not decode is logged, counted as skipped and
// acknowledged with its batch (reading it again would not change it).
func Consume(ctx context.Context, src *source.Source, kind Kind, st Appendable, o Options) error {
	o.defaults()
	log := o.Logger.With("stream", string(kind))
	for ctx.Err() == nil {
		b, err := src.ReadBatch(ctx, o.FlushEvery)
		if ctx.Err() != nil {
			_ = b.Nak(0) // not stored: the next reader gets it at once
			return nil
		}
		if err != nil {
			log.Warn("store: reading the stream failed; trying again", "err", err)
			pause(ctx, o.RetryAfter)
			continue
		}
		if len(b.Msgs) == 0 {
			continue
		}
		began := time.Now()
		n, err := write(st.Appender(), kind, b, log, o)
		if err != nil {
			o.Stats.Retries.Add(1)
			o.Metrics.failed(kind)
			log.Warn("store: commit failed; the batch comes again", "messages", len(b.Msgs), "in", o.RetryAfter, "err", err)
			if err := b.Nak(o.RetryAfter); err != nil {
				log.Warn("store: handing the batch back failed; it comes again after the ack wait", "err", err)
			}
			continue
		}
		log.Debug("store: committed", "rows", n, "messages", len(b.Msgs))
		// Counted before the ack: whoever sees the messages acknowledged
		// sees their rows counted.
		o.Stats.Batches.Add(1)
		o.Stats.Rows.Add(uint64(n))
		o.Stats.Lag.Store(b.Lag())
		o.Metrics.committed(kind, n, time.Since(began), b.Lag())
		if err := b.Ack(ctx); err != nil && ctx.Err() == nil {
			log.Warn("store: the ack was not confirmed; the batch may come again (its rows are replaced, not added)", "err", err)
		}
	}
	return nil
}

// write appends the batch's messages to a and commits them, or rolls them
// back; it returns how many rows it committed.
func write(a Appender, kind Kind, b source.Batch, log *slog.Logger, o Options) (int, error) {
	n := 0
	for _, m := range b.Msgs {
		md, err := m.Metadata()
		if err != nil {
			a.Rollback()
			return 0, fmt.Errorf("message on %s: %w", m.Subject(), err)
		}
		meta := schema.StreamMeta{Seq: md.Sequence.Stream, Time: md.Timestamp}
		if err := appendMsg(a, kind, m, meta); err != nil {
			o.Stats.Skipped.Add(1)
			o.Metrics.skip(kind)
			log.Warn("store: a message is not a "+string(kind[:len(kind)-1])+"; skipped", "subject", m.Subject(), "stream_seq", meta.Seq, "err", err)
			continue
		}
		n++
	}
	if err := a.Commit(); err != nil {
		a.Rollback()
		return 0, err
	}
	return n, nil
}

// appendMsg decodes m as kind and appends it to a.
func appendMsg(a Appender, kind Kind, m jetstream.Msg, meta schema.StreamMeta) error {
	if kind == Verdicts {
		var v schema.VerdictEvent
		if err := json.Unmarshal(m.Data(), &v); err != nil {
			return err
		}
		if v.RunID == "" || v.Rule.ID == "" {
			return fmt.Errorf("stream seq %d: a verdict needs runId and rule.id", meta.Seq)
		}
		return a.AppendVerdict(&v, meta)
	}
	e, err := schema.DecodeEvent(fmt.Sprintf("stream seq %d", meta.Seq), m.Data())
	if err != nil {
		return err
	}
	return a.AppendEvent(&e, m.Data(), meta)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
