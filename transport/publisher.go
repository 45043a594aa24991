package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/internal/avxstate"
	"github.com/ponens/ponens/schema"
)

// PublisherOptions bounds and paces a Publisher. Zero values take the
// defaults.
type PublisherOptions struct {
	// MaxInFlight is the most events published but not yet acknowledged;
	// Publish blocks while that many are (default 512).
	MaxInFlight int
	// Retries is how often an event is sent again, with the same message
	// id, after a timeout or a transient failure (default 5; negative: never).
	Retries int
	// Timeout is how long one attempt waits for its acknowledgement
	// (default 5s).
	Timeout time.Duration
	// RetryWait is the pause before the first retry; it doubles for each
	// further one, up to 2 seconds (default 100ms).
	RetryWait time.Duration
}

// The defaults of PublisherOptions.
const (
	DefaultMaxInFlight = 512
	DefaultRetries     = 5
	DefaultTimeout     = 5 * time.Second
	DefaultRetryWait   = 100 * time.Millisecond
	maxRetryWait       = 2 * time.Second
)

// withDefaults fills in the zero values.
func (o PublisherOptions) withDefaults() PublisherOptions {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Retries == 0 {
		o.Retries = DefaultRetries
	}
	o.Retries = max(o.Retries, 0)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.RetryWait <= 0 {
		o.RetryWait = DefaultRetryWait
	}
	return o
}

var (
	// ErrClosed is returned by a Publisher that has been closed.
	ErrClosed = errors.New("publisher closed")
	// ErrAbandoned is the outcome of an event still unacknowledged when
	// CloseContext's context ended: it may or may not be stored, and
	// publishing it again (with the same message id) is safe.
	ErrAbandoned = errors.New("not acknowledged: publishing stopped before the server answered")
	// ErrStreamFull is the outcome of an event the EVENTS stream refused
	// because it is at its nats.events.max_bytes or max_msgs: nothing
	// stored was evicted for it; it can be sent again once there is room.
	ErrStreamFull = errors.New("the stream is full")
)

// jsStoreFailed is the JetStream error code of a message the stream did
// not store; at a limit with the discard-new policy its description says
// which limit.
const jsStoreFailed = 10077

// streamFull returns err wrapped as ErrStreamFull when it is a stream
// refusing a message at its limit, and nil otherwise.
func streamFull(err error) error {
	var api *natsjs.APIError
	if !errors.As(err, &api) || api.ErrorCode != jsStoreFailed {
		return nil
	}
	if d := api.Description; strings.Contains(d, "maximum messages") || strings.Contains(d, "maximum bytes") {
		return fmt.Errorf("%w (%s)", ErrStreamFull, d)
	}
	return nil
}

// PublishError is the failure to store one event: refused before it was
// sent (Attempts 0: invalid, too large, the context ended) or not
// acknowledged after every attempt.
type PublishError struct {
	RunID    string
	Seq      uint64
	Attempts int
	Err      error
}

// Error names the event and, for an event that was sent, the attempts.
func (e *PublishError) Error() string {
	s := "publish event " + strconv.Quote(e.RunID) + " seq " + strconv.FormatUint(e.Seq, 10)
	if e.Attempts > 0 {
		s += fmt.Sprintf(" (%d attempts)", e.Attempts)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *PublishError) Unwrap() error { return e.Err }

// Stats counts what a Publisher did.
type Stats struct {
	Stored     int64 // acknowledged as newly stored
	Duplicates int64 // acknowledged as already stored (a duplicate message id)
	Retries    int64 // attempts after the first
	Failed     int64 // given up on after every attempt
	// Conflicts are duplicates whose stored message has other content
	// (schema.ErrConflictingDuplicate): refused, not stored.
	Conflicts int64
	// Unchecked are duplicates whose stored message could not be read
	// back to compare (counted in Duplicates too).
	Unchecked int64
}

// Publisher publishes events to the EVENTS stream asynchronously, with at
// most MaxInFlight of them unacknowledged, retrying each with the same
// Nats-Msg-Id until it is acknowledged (see the package documentation).
//
// A Publisher is safe for concurrent use by several goroutines. One
// goroutine of its own waits for the acknowledgements and sends events
// again, until Close.
type Publisher struct {
	js       natsjs.JetStream
	subjects schema.Subjects
	opts     PublisherOptions

	slots     chan struct{} // one token per event in flight
	queue     chan *pending // sent, waiting for the acknowledgement
	closing   chan struct{} // closed when Close starts
	abort     chan struct{} // closed when CloseContext gives up waiting
	acked     chan struct{} // closed when the acknowledging goroutine ends
	closeOnce sync.Once
	abortOnce sync.Once
	checks    sync.WaitGroup // comparisons of duplicates in progress

	// Lock order: closeMu, then mu.
	closeMu sync.RWMutex // read-held by each Publish call, write-held by Close
	closed  bool         // guarded by closeMu

	mu       sync.Mutex // guards the fields below
	sent     uint64     // events queued so far
	resolved uint64     // events acknowledged or failed so far
	waiters  []*flushWaiter
	failure  error // the first failure of Publish not yet reported
	stats    Stats
	events   natsjs.Stream // EVENTS, to read duplicates back; nil until needed
}

// pending is an event sent and waiting for its acknowledgement.
type pending struct {
	msg   *nats.Msg
	runID string
	seq   uint64
	n     uint64 // its place in sending order, from 1

	fut      natsjs.PubAckFuture // the latest attempt; nil while paused before the next
	attempts int                 // attempts so far
	deadline time.Time           // when the latest attempt times out, or the pause ends
	// report receives the outcome of an event of PublishBatch; nil for
	// Publish, whose failures Flush reports.
	report func(err error, duplicate bool)
}

// flushWaiter is a Flush waiting for the events queued before it.
type flushWaiter struct {
	upTo    uint64 // the events numbered up to upTo
	pending uint64 // of which this many are not resolved yet
	c       chan struct{}
}

// NewPublisher returns a Publisher of events on subjects through js. For
// acknowledgements lost without a reconnection not to pile up in js, create
// js with natsjs.WithPublishAsyncTimeout (opts.Timeout is a good value).
func NewPublisher(js natsjs.JetStream, subjects schema.Subjects, opts PublisherOptions) *Publisher {
	opts = opts.withDefaults()
	p := &Publisher{
		js:       js,
		subjects: subjects,
		opts:     opts,
		slots:    make(chan struct{}, opts.MaxInFlight),
		queue:    make(chan *pending, opts.MaxInFlight),
		closing:  make(chan struct{}),
		abort:    make(chan struct{}),
		acked:    make(chan struct{}),
	}
	go p.acknowledge()
	return p
}

// Publish validates ev and publishes it without waiting for the
// acknowledgement; it blocks while MaxInFlight events are unacknowledged,
// until ctx ends. It returns a *PublishError when ev is invalid (wrapping
// the *schema.FieldError), too large for the server (wrapping
// schema.ErrTooLarge) or could not be sent, ctx.Err() when ctx ended first,
// and ErrClosed after Close. A failure after sending is recorded and
// returned by the next Flush or Close.
func (p *Publisher) Publish(ctx context.Context, ev *schema.Event) error {
	return p.publish(ctx, ev, nil)
}

// PublishReport publishes ev as Publish does and, when it returns nil,
// calls report exactly once with the event's outcome: nil once it is stored
// (or was already), a *PublishError after every attempt failed, or one
// wrapping ErrAbandoned when CloseContext stopped waiting for it. report
// runs on the Publisher's goroutine and must not block. Its failures are
// not Flush's.
func (p *Publisher) PublishReport(ctx context.Context, ev *schema.Event, report func(error)) error {
	if report == nil {
		report = func(error) {}
	}
	return p.publish(ctx, ev, func(err error, _ bool) { report(err) })
}

// PublishBatch publishes events as Publish does and waits until each is
// acknowledged or has failed. It returns one error per event, nil for an
// event that is stored (or was already). Once ctx has ended no further event
// is sent (those get ctx.Err()), but the ones sent are still waited for,
// which each attempt's Timeout bounds. Its failures are not Flush's.
func (p *Publisher) PublishBatch(ctx context.Context, events []*schema.Event) []error {
	out := p.PublishBatchOutcomes(ctx, events)
	errs := make([]error, len(out))
	for i, o := range out {
		errs[i] = o.Err
	}
	return errs
}

// Outcome is what became of one event of PublishBatchOutcomes: Err nil
// when it is stored, Duplicate when it was stored before (the same
// message id, the same content).
type Outcome struct {
	Err       error
	Duplicate bool
}

// PublishBatchOutcomes is PublishBatch telling the events stored now from
// those stored before.
func (p *Publisher) PublishBatchOutcomes(ctx context.Context, events []*schema.Event) []Outcome {
	out := make([]Outcome, len(events))
	var wg sync.WaitGroup
	for i, ev := range events {
		wg.Add(1)
		err := p.publish(ctx, ev, func(err error, dup bool) {
			out[i] = Outcome{Err: err, Duplicate: dup && err == nil}
			wg.Done()
		})
		if err == nil {
			continue
		}
		wg.Done()
		out[i].Err = err
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			for j := i + 1; j < len(events); j++ {
				out[j].Err = err
			}
			break
		}
	}
	wg.Wait()
	return out
}

// publish sends ev and queues it for its acknowledgement.
func (p *Publisher) publish(ctx context.Context, ev *schema.Event, report func(error, bool)) error {
	fail := func(err error) error { return &PublishError{RunID: ev.RunID, Seq: ev.Seq, Err: err} }
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ev.Validate(); err != nil {
		return fail(err)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return fail(err)
	}
	msg := nats.NewMsg(p.subjects.Event(ev.RunID))
	msg.Data = data
	// Set once: retries resend msg as it is, so nothing mutates it while
	// the client may still be encoding an earlier attempt.
	msg.Header.Set(natsjs.MsgIDHeader, schema.EventMsgID(ev.RunID, ev.Seq))
	msg.Header.Set(natsjs.ExpectedStreamHeader, schema.StreamEvents)
	avxstate.Clear() // the event decoders' assembly may have left the state dirty: SHA-256 would run many times slower
	sum := sha256.Sum256(data)
	msg.Header.Set(schema.HeaderHash, hex.EncodeToString(sum[:]))
	if err := p.checkSize(msg); err != nil {
		return fail(err)
	}

	if err := p.denied(); err != nil {
		return fail(err)
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closing:
		return ErrClosed
	}
	it := &pending{msg: msg, runID: ev.RunID, seq: ev.Seq, report: report, attempts: 1}
	for {
		it.fut, err = p.js.PublishMsgAsync(msg)
		if !errors.Is(err, natsjs.ErrTooManyStalledMsgs) || ctx.Err() != nil {
			break
		}
	}
	switch {
	case err == nil:
		it.deadline = time.Now().Add(p.opts.Timeout)
	case ctx.Err() != nil:
		<-p.slots
		return ctx.Err()
	case Retryable(err) && p.opts.Retries > 0:
		// E.g. a write that failed as the connection broke: the
		// acknowledging goroutine sends it again after a pause.
		it.fut, it.deadline = nil, time.Now().Add(p.opts.RetryWait)
		p.mu.Lock()
		p.stats.Retries++
		p.mu.Unlock()
	default:
		<-p.slots
		return fail(err)
	}
	// The queue never blocks: it holds at most one event per slot.
	p.mu.Lock()
	p.sent++
	it.n = p.sent
	p.queue <- it
	p.mu.Unlock()
	return nil
}

// checkSize refuses a message the server would refuse as too large.
func (p *Publisher) checkSize(msg *nats.Msg) error {
	nc := p.js.Conn()
	if nc == nil {
		return nil
	}
	limit := nc.MaxPayload()
	size := int64(len(msg.Data)) + headerSize(msg.Header)
	if limit > 0 && size > limit {
		return &schema.FieldError{Err: schema.ErrTooLarge,
			Expected: fmt.Sprintf("an encoded event of at most %d bytes (the NATS server's max_payload, with headers)", limit),
			Got:      fmt.Sprintf("%d bytes", size)}
	}
	return nil
}

// headerSize is the encoded size of h: "NATS/1.0\r\n", "Key: value\r\n"
// lines and "\r\n".
func headerSize(h nats.Header) int64 {
	n := int64(len("NATS/1.0\r\n\r\n"))
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// acknowledge resolves the queued events until Close. It keeps them in a
// list in sending order and waits on the head: for its acknowledgement, or
// its deadline (Timeout after it was sent), or, for an event waiting to be
// sent again, the end of its pause. A retried event goes to the back, so
// that deadlines overlap: a burst of lost acknowledgements costs one
// Timeout, not one each.
func (p *Publisher) acknowledge() {
	defer close(p.acked)
	defer p.checks.Wait()
	var list []*pending
	open := true
	take := func(it *pending, ok bool) {
		if ok {
			list = append(list, it)
		} else {
			open = false
		}
	}
	for open || len(list) > 0 {
		if len(list) == 0 {
			it, ok := <-p.queue
			take(it, ok)
			continue
		}
	drain:
		for open {
			select {
			case it, ok := <-p.queue:
				take(it, ok)
			default:
				break drain
			}
		}
		it := list[0]
		list[0] = nil
		list = list[1:]
		var ack *natsjs.PubAck
		var err error
		if p.aborted() {
			p.resolve(it, nil, &PublishError{RunID: it.runID, Seq: it.seq, Attempts: it.attempts, Err: ErrAbandoned})
			continue
		}
		if it.fut == nil { // paused before being sent again
			if !p.sleepUntil(it.deadline) {
				list = append(list, it) // resolved as abandoned on the next turn
				continue
			}
			it.attempts++
			it.fut, err = p.js.PublishMsgAsync(it.msg)
			it.deadline = time.Now().Add(p.opts.Timeout)
		}
		if err == nil {
			ack, err = p.waitFor(it)
		}
		switch {
		case err == nil && ack.Duplicate:
			p.checks.Add(1)
			go func() {
				defer p.checks.Done()
				p.resolve(it, ack, p.compare(it, ack))
			}()
		case err == nil:
			p.resolve(it, ack, nil)
		case it.attempts <= p.opts.Retries && Retryable(err):
			p.mu.Lock()
			p.stats.Retries++
			p.mu.Unlock()
			it.fut = nil
			it.deadline = time.Now().Add(min(p.opts.RetryWait<<(it.attempts-1), maxRetryWait))
			list = append(list, it)
		default:
			if full := streamFull(err); full != nil {
				err = full
			}
			p.resolve(it, nil, &PublishError{RunID: it.runID, Seq: it.seq, Attempts: it.attempts, Err: err})
		}
	}
}

// compare reads back the message a duplicate acknowledgement points at and
// returns a *PublishError wrapping schema.ErrConflictingDuplicate when its
// content differs from it's. A stored message without a hash (published
// otherwise) or one that cannot be read is counted as Unchecked and taken
// as the same.
func (p *Publisher) compare(it *pending, ack *natsjs.PubAck) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
	defer cancel()
	stored, err := p.storedMsg(ctx, ack.Sequence)
	want := it.msg.Header.Get(schema.HeaderHash)
	if err != nil || stored.Header.Get(schema.HeaderHash) == "" {
		p.mu.Lock()
		p.stats.Unchecked++
		p.mu.Unlock()
		return nil
	}
	if got := stored.Header.Get(schema.HeaderHash); got != want {
		return &PublishError{RunID: it.runID, Seq: it.seq, Attempts: it.attempts, Err: &schema.FieldError{
			Err:      schema.ErrConflictingDuplicate,
			Expected: fmt.Sprintf("the content stored for this run and seq (EVENTS sequence %d, sha256 %s)", ack.Sequence, got),
			Got:      "other content (sha256 " + want + ")"}}
	}
	return nil
}

// storedMsg reads message seq of EVENTS.
func (p *Publisher) storedMsg(ctx context.Context, seq uint64) (*natsjs.RawStreamMsg, error) {
	p.mu.Lock()
	st := p.events
	p.mu.Unlock()
	if st == nil {
		var err error
		if st, err = p.js.Stream(ctx, schema.StreamEvents); err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.events = st
		p.mu.Unlock()
	}
	return st.GetMsg(ctx, seq)
}

// sleepUntil pauses until t; false when CloseContext gave up first.
func (p *Publisher) sleepUntil(t time.Time) bool {
	if d := time.Until(t); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-p.abort:
			return false
		}
	}
	return !p.aborted()
}

// aborted reports whether CloseContext gave up waiting.
func (p *Publisher) aborted() bool {
	select {
	case <-p.abort:
		return true
	default:
		return false
	}
}

// waitFor waits for the outcome of it's latest attempt, until its deadline.
// An outcome already in wins over a deadline already past.
func (p *Publisher) waitFor(it *pending) (*natsjs.PubAck, error) {
	select {
	case ack := <-it.fut.Ok():
		return ack, nil
	case err := <-it.fut.Err():
		return nil, err
	default:
	}
	t := time.NewTimer(time.Until(it.deadline))
	defer t.Stop()
	poll := time.NewTicker(deniedPoll)
	defer poll.Stop()
	for {
		select {
		case ack := <-it.fut.Ok():
			return ack, nil
		case err := <-it.fut.Err():
			return nil, err
		case <-t.C:
			return nil, fmt.Errorf("%w (waited %s)", natsjs.ErrAsyncPublishTimeout, p.opts.Timeout)
		case <-p.abort:
			return nil, ErrAbandoned
		case <-poll.C:
			if err := p.denied(); err != nil {
				return nil, err
			}
		}
	}
}

// deniedPoll is how often an event waiting for its acknowledgement looks
// for a permission violation: the server drops an event its client may not
// publish and says so only on the connection, so the acknowledgement would
// never come.
const deniedPoll = 50 * time.Millisecond

// denied returns an error wrapping nats.ErrPermissionViolation when the
// server has refused to let the publisher's connection publish events
// (its user's permissions do not allow the events subjects): retrying
// cannot help, so events fail at once instead.
func (p *Publisher) denied() error {
	nc := p.js.Conn()
	if nc == nil {
		return nil
	}
	last := nc.LastError()
	if errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(strings.ToLower(last.Error()), strings.ToLower(`publish to "`+p.subjects.Prefix+`.events.`)) {
		return fmt.Errorf("%w (the server does not let this client's user publish on %s)", last, p.subjects.EventsIn())
	}
	return nil
}

// Retryable reports whether a publish that failed with err may succeed when
// sent again: a lost or late acknowledgement, a disconnection or a write
// that failed as the connection broke, no stream listening yet, or
// JetStream temporarily unavailable. Messages the server refuses and a
// closed connection are not.
func Retryable(err error) bool {
	if streamFull(err) != nil {
		return false // room comes only from an operator or from max_age
	}
	for _, transient := range []error{
		natsjs.ErrAsyncPublishTimeout, natsjs.ErrNoStreamResponse, natsjs.ErrTooManyStalledMsgs,
		nats.ErrTimeout, nats.ErrNoResponders, nats.ErrDisconnected, nats.ErrReconnectBufExceeded,
		nats.ErrStaleConnection, nats.ErrConnectionReconnecting,
	} {
		if errors.Is(err, transient) {
			return true
		}
	}
	var api *natsjs.APIError
	if errors.As(err, &api) {
		return api.Code == 503
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// resolve records the outcome of it and frees its slot.
func (p *Publisher) resolve(it *pending, ack *natsjs.PubAck, err error) {
	p.mu.Lock()
	switch {
	case errors.Is(err, schema.ErrConflictingDuplicate):
		p.stats.Conflicts++
		if it.report == nil && p.failure == nil {
			p.failure = err
		}
	case err != nil:
		p.stats.Failed++
		if it.report == nil && p.failure == nil {
			p.failure = err
		}
	case ack.Duplicate:
		p.stats.Duplicates++
	default:
		p.stats.Stored++
	}
	p.resolved++
	kept := p.waiters[:0]
	for _, w := range p.waiters {
		if it.n <= w.upTo {
			w.pending--
		}
		if w.pending == 0 {
			close(w.c)
		} else {
			kept = append(kept, w)
		}
	}
	clear(p.waiters[len(kept):])
	p.waiters = kept
	p.mu.Unlock()
	<-p.slots
	if it.report != nil {
		it.report(err, ack != nil && ack.Duplicate)
	}
}

// Flush waits until every event whose Publish returned before the call is
// acknowledged or has failed, then returns the first failure of Publish not
// yet reported (and forgets it), or ctx.Err() when ctx ends first.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	if p.resolved < p.sent {
		// Every event not resolved yet is numbered up to p.sent.
		w := &flushWaiter{upTo: p.sent, pending: p.sent - p.resolved, c: make(chan struct{})}
		p.waiters = append(p.waiters, w)
		p.mu.Unlock()
		select {
		case <-w.c:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	err := p.failure
	p.failure = nil
	p.mu.Unlock()
	return err
}

// Stats returns what the Publisher has done so far.
func (p *Publisher) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops accepting events (Publish then returns ErrClosed), waits for
// the events in flight to be acknowledged or fail, each bounded by Timeout
// and Retries, and returns the first failure Flush has not reported. It
// leaves the NATS connection open. Calling it again only returns nil.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		close(p.closing)
		p.closeMu.Lock()
		p.closed = true
		close(p.queue)
		p.closeMu.Unlock()
	})
	<-p.acked
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.failure
	p.failure = nil
	return err
}

// CloseContext is Close with a bound: when ctx ends before every event in
// flight is resolved, it stops waiting and sending again, resolves each
// event still open as abandoned (ErrAbandoned: PublishReport's callbacks
// say which), and returns a *PublishError wrapping ErrAbandoned unless an
// earlier failure is to be reported. It returns once the Publisher's
// goroutine has ended.
func (p *Publisher) CloseContext(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		p.abortOnce.Do(func() { close(p.abort) })
		return <-done
	}
}
