package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// DeadLetter is one stored dead letter, as ReadDeadLetters gives it.
type DeadLetter struct {
	Seq    uint64    `json:"seq"` // the DEADLETTER stream sequence
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
	Source string    `json:"source"`
	Error  string    `json:"error"`
	// RunID is the runId the refused input names, when it can be read.
	RunID string `json:"runId,omitempty"`
	// Truncated is the original size in bytes of an input kept only in
	// part (0: kept whole).
	Truncated int64 `json:"truncated,omitempty"`
	// Body is the refused input (its first bytes when Truncated).
	Body json.RawMessage `json:"-"`
}

// DeadLetterFilter selects dead letters; zero values select everything.
type DeadLetterFilter struct {
	Since  time.Time // stored at or after
	Reason string    // this reason only
}

// ReadDeadLetters returns the dead letters stored now that filter selects,
// oldest first.
func ReadDeadLetters(ctx context.Context, js natsjs.JetStream, subjects schema.Subjects, filter DeadLetterFilter) ([]DeadLetter, error) {
	var out []DeadLetter
	err := eachDeadLetter(ctx, js, subjects, filter, false, func(d DeadLetter) error {
		out = append(out, d)
		return nil
	})
	return out, err
}

// TailDeadLetters calls fn with each dead letter filter selects, those
// stored now and then each new one as it is stored, until ctx ends (nil)
// or fn fails.
func TailDeadLetters(ctx context.Context, js natsjs.JetStream, subjects schema.Subjects, filter DeadLetterFilter, fn func(DeadLetter) error) error {
	return eachDeadLetter(ctx, js, subjects, filter, true, fn)
}

func eachDeadLetter(ctx context.Context, js natsjs.JetStream, subjects schema.Subjects, filter DeadLetterFilter, follow bool, fn func(DeadLetter) error) error {
	st, err := stream(ctx, js, schema.StreamDeadLetter)
	if err != nil {
		return fmt.Errorf("stream %s: %w", schema.StreamDeadLetter, err)
	}
	cfg := natsjs.OrderedConsumerConfig{}
	if filter.Reason != "" {
		cfg.FilterSubjects = []string{subjects.DeadLetter(filter.Reason)}
	}
	if !filter.Since.IsZero() {
		cfg.DeliverPolicy = natsjs.DeliverByStartTimePolicy
		since := filter.Since
		cfg.OptStartTime = &since
	}
	c, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("reading %s: %w", schema.StreamDeadLetter, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading %s: %w", schema.StreamDeadLetter, err)
	}
	pending := info.NumPending
	for follow || pending > 0 {
		m, err := c.Next(natsjs.FetchContext(ctx))
		switch {
		case ctx.Err() != nil && follow:
			return nil
		case errors.Is(err, natsjs.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded) && follow:
			continue
		case err != nil:
			return fmt.Errorf("reading %s: %w", schema.StreamDeadLetter, err)
		}
		if pending > 0 {
			pending--
		}
		if err := fn(deadLetterOf(m)); err != nil {
			return err
		}
	}
	return nil
}

// deadLetterOf reads a stored dead letter.
func deadLetterOf(m natsjs.Msg) DeadLetter {
	h := m.Headers()
	d := DeadLetter{Reason: h.Get(schema.HeaderReason), Source: h.Get(schema.HeaderSource), Error: h.Get(schema.HeaderError), Body: m.Data()}
	if md, err := m.Metadata(); err == nil {
		d.Seq, d.Time = md.Sequence.Stream, md.Timestamp.UTC()
	}
	d.Truncated, _ = strconv.ParseInt(h.Get(schema.HeaderTruncated), 10, 64) // absent: kept whole
	var env struct {
		RunID string `json:"runId"`
	}
	if json.Unmarshal(m.Data(), &env) == nil {
		d.RunID = env.RunID
	}
	return d
}

// ReplayResult is what replaying one dead letter did: Err is nil when its
// event is stored now (or was already), else why not.
type ReplayResult struct {
	DeadLetter
	Err error
}

// ReplayDeadLetters publishes the event each selected dead letter holds
// again through pub, for refusals whose cause is gone (a newer build
// knows the type, a gap was filled), and waits for each outcome. An input
// that still does not decode, or was kept only in part, is not sent; its
// result says why. The dead letters stay.
func ReplayDeadLetters(ctx context.Context, js natsjs.JetStream, subjects schema.Subjects, filter DeadLetterFilter, pub *Publisher) ([]ReplayResult, error) {
	dls, err := ReadDeadLetters(ctx, js, subjects, filter)
	if err != nil {
		return nil, err
	}
	results := make([]ReplayResult, len(dls))
	var events []*schema.Event
	var at []int
	for i, d := range dls {
		results[i].DeadLetter = d
		if d.Truncated > 0 {
			results[i].Err = fmt.Errorf("only the first %d of its %d bytes were kept", len(d.Body), d.Truncated)
			continue
		}
		ev, err := schema.DecodeEvent(fmt.Sprintf("dead letter %d", d.Seq), d.Body)
		if err != nil {
			results[i].Err = err
			continue
		}
		events = append(events, &ev)
		at = append(at, i)
	}
	for j, err := range pub.PublishBatch(ctx, events) {
		results[at[j]].Err = err
	}
	return results, nil
}
