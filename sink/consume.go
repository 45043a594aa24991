package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
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
	Verdicts    Kind = "verdicts"
	Events      Kind = "events"
	DeadLetters Kind = "dead_letters"
	// RuleVersions is the stream of the fleet's rule manifest, the
	// key-value bucket <prefix>_rules in which the workers record every
	// version of every rule as they load and reload their rules.
	RuleVersions Kind = "rule_versions"
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
	// Ended, when set, is called after a batch of events is committed and
	// before it is acknowledged, with the runs whose closing event
	// (run.finish, run.error, run.cancel) the batch held, in stream order:
	// what is derived from a run's whole events (its record entries) is
	// written there. An error hands the batch back, as a failed commit
	// does; the batch comes again and Ended is called again.
	Ended func(ctx context.Context, runs []string) error
	// BeforeAck, when set, is called after a batch is committed and before
	// it is acknowledged: the window where a crash delivers a stored batch
	// again. Fault tests hold the sink there to kill it.
	BeforeAck func(kind Kind, messages int)
}

// Stats counts what a sink did, per kind of stream; its fields may be read
// while the sink runs.
type Stats struct {
	Batches, Rows, Skipped, Retries atomic.Uint64
	// Lag is the messages the consumer had yet to read at the last
	// commit, or had yet to store at the last failed one.
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

// FromStreams stores the VERDICTS, EVENTS and DEADLETTER streams of sub
// and the stream of its rule manifest into st until ctx ends, each on its
// own durable consumer (<prefix>-store-<kind>) and goroutine. The rule
// manifest's stream is made by the first worker: until it exists, the
// sink waits for it. It returns nil when ctx ends, and an error when a
// consumer cannot be made.
func FromStreams(ctx context.Context, js jetstream.JetStream, sub schema.Subjects, st Appendable, o Options) error {
	o.defaults()
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range []struct {
		kind   Kind
		stream string
	}{{Verdicts, schema.StreamVerdicts}, {Events, schema.StreamEvents}, {DeadLetters, schema.StreamDeadLetter}, {RuleVersions, "KV_" + sub.Bucket(schema.BucketRules)}} {
		so := source.Options{Stream: s.stream, Durable: sub.Prefix + "-store-" + strings.ReplaceAll(string(s.kind), "_", "-"), BatchRows: o.BatchRows, AckWait: o.AckWait}
		if s.kind == RuleVersions {
			g.Go(func() error {
				src, err := waitSource(gctx, js, so, o)
				if src == nil {
					return err
				}
				return Consume(gctx, src, s.kind, st, o)
			})
			continue
		}
		src, err := source.Open(gctx, js, so)
		if gctx.Err() != nil {
			break // ended while the consumers were being made
		}
		if err != nil {
			return err
		}
		g.Go(func() error { return Consume(gctx, src, s.kind, st, o) })
	}
	return g.Wait()
}

// waitSource opens the source of so, waiting RetryAfter between tries
// while its stream does not exist; it returns nil when ctx ends first.
func waitSource(ctx context.Context, js jetstream.JetStream, so source.Options, o Options) (*source.Source, error) {
	for {
		src, err := source.Open(ctx, js, so)
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case err == nil || !errors.Is(err, jetstream.ErrStreamNotFound):
			return src, err
		}
		pause(ctx, o.RetryAfter)
	}
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
		app := st.Appender()
		n, ended, err := write(app, kind, b, log, o)
		if c, ok := app.(tableCounter); ok {
			c.takeInserted(o.Metrics.Inserted)
		}
		if err == nil && len(ended) > 0 && o.Ended != nil {
			if err = o.Ended(ctx, ended); err != nil {
				err = fmt.Errorf("after the commit, for the %d runs that ended: %w", len(ended), err)
			}
		}
		if err != nil {
			// No batch is committed while the store is down, but the
			// backlog grows: the lag is the consumer's.
			lag, lerr := src.Backlog(ctx)
			if lerr != nil {
				lag = b.Lag()
			}
			o.Stats.Retries.Add(1)
			o.Stats.Lag.Store(lag)
			o.Metrics.failed(kind, lag)
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
		if o.BeforeAck != nil {
			o.BeforeAck(kind, len(b.Msgs))
		}
		if err := b.Ack(ctx); err != nil && ctx.Err() == nil {
			log.Warn("store: the ack was not confirmed; the batch may come again (its rows are replaced, not added)", "err", err)
		}
	}
	return nil
}

// write appends the batch's messages to a and commits them, or rolls them
// back; it returns how many rows it committed and the runs whose closing
// event it committed.
func write(a Appender, kind Kind, b source.Batch, log *slog.Logger, o Options) (int, []string, error) {
	n := 0
	var ended []string
	for _, m := range b.Msgs {
		md, err := m.Metadata()
		if err != nil {
			a.Rollback()
			return 0, nil, fmt.Errorf("message on %s: %w", m.Subject(), err)
		}
		meta := schema.StreamMeta{Seq: md.Sequence.Stream, Time: md.Timestamp}
		run, err := appendMsg(a, kind, m, meta)
		if run != "" {
			ended = append(ended, run)
		}
		if err != nil {
			o.Stats.Skipped.Add(1)
			o.Metrics.skip(kind)
			log.Warn("store: a message is not a "+string(kind[:len(kind)-1])+"; skipped", "subject", m.Subject(), "stream_seq", meta.Seq, "err", err)
			continue
		}
		n++
	}
	if err := a.Commit(); err != nil {
		a.Rollback()
		return 0, nil, err
	}
	return n, ended, nil
}

// appendMsg decodes m as kind and appends it to a; for a run's closing
// event appended, it returns the run.
func appendMsg(a Appender, kind Kind, m jetstream.Msg, meta schema.StreamMeta) (ended string, err error) {
	switch kind {
	case Verdicts:
		var v schema.VerdictEvent
		if err := json.Unmarshal(m.Data(), &v); err != nil {
			return "", err
		}
		if v.RunID == "" || v.Rule.ID == "" {
			return "", fmt.Errorf("stream seq %d: a verdict needs runId and rule.id", meta.Seq)
		}
		return "", a.AppendVerdict(&v, verdictMeta(m, meta))
	case DeadLetters:
		return "", a.AppendDeadLetter(deadLetterOf(m), meta)
	case RuleVersions:
		return "", appendRuleHistory(a, m, meta)
	}
	e, err := schema.DecodeEvent(fmt.Sprintf("stream seq %d", meta.Seq), m.Data())
	if err != nil {
		return "", err
	}
	if err := a.AppendEvent(&e, m.Data(), meta); err != nil {
		return "", err
	}
	if e.Type.IsTerminal() {
		return e.RunID, nil
	}
	return "", nil
}

// verdictMeta is meta stamped with the time of the event the verdict of m
// is on, from its schema.HeaderEventTime; a message without the header (or
// with one that does not parse) keeps the time the stream stored it.
func verdictMeta(m jetstream.Msg, meta schema.StreamMeta) schema.StreamMeta {
	if h := m.Headers(); h != nil {
		if t, err := time.Parse(time.RFC3339Nano, h.Get(schema.HeaderEventTime)); err == nil {
			meta.Time = t
		}
	}
	return meta
}

// deadLetterOf reads a dead letter's headers and body.
func deadLetterOf(m jetstream.Msg) *schema.DeadLetter {
	h := m.Headers()
	d := &schema.DeadLetter{Subject: m.Subject(), Reason: h.Get(schema.HeaderReason), Source: h.Get(schema.HeaderSource), Error: h.Get(schema.HeaderError), Body: m.Data()}
	d.Truncated, _ = strconv.ParseUint(h.Get(schema.HeaderTruncated), 10, 64)
	return d
}

// RuleHistory is a rule's entry in the fleet's rule manifest, as the sink
// stores it: every meaning the rule has had, oldest first.
type RuleHistory struct {
	ID       string        `json:"id"`
	Versions []RuleVersion `json:"versions"`
}

// RuleVersion is one meaning of a rule in its RuleHistory.
type RuleVersion struct {
	Version     int       `json:"version"`
	Meaning     string    `json:"meaning"` // a hash of the meaning (the text_hash column)
	Text        string    `json:"text"`
	Description string    `json:"description"`
	Mode        string    `json:"mode"`
	Since       time.Time `json:"since"`
}

// appendRuleHistory appends every version of the rule history in m; a
// key's deletion (an empty message) appends nothing.
func appendRuleHistory(a Appender, m jetstream.Msg, meta schema.StreamMeta) error {
	if len(m.Data()) == 0 {
		return nil
	}
	var h RuleHistory
	if err := json.Unmarshal(m.Data(), &h); err != nil {
		return err
	}
	return AppendRuleHistory(a, &h, meta)
}

// AppendRuleHistory appends a row of rule_versions for each version of h,
// read at m.
func AppendRuleHistory(a Appender, h *RuleHistory, m schema.StreamMeta) error {
	if h.ID == "" {
		return fmt.Errorf("stream seq %d: a rule history needs an id", m.Seq)
	}
	for _, v := range h.Versions {
		r := schema.RuleVersionRow{RuleID: h.ID, Version: strconv.Itoa(v.Version), Description: v.Description, Mode: v.Mode, Text: v.Text, TextHash: v.Meaning, Since: v.Since}
		if err := a.AppendRuleVersion(&r, m); err != nil {
			return err
		}
	}
	return nil
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
