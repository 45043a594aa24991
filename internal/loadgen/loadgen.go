// Package loadgen loads a running ponens pipeline (NATS JetStream, monitor
// workers, the alert stage) with a reproducible stream of agent events and
// measures what DESIGN.md §5 sets targets for: sustained events per second
// end to end, publish → verdict and publish → alert latency, and the runs
// held open. `ponens bench` runs it against an embedded pipeline or a
// running `ponens serve`; docs/LOAD.md defines every figure and records the
// measurements.
//
// # The load
//
// Runs many concurrent runs (Options.Runs). First every run's run.start is
// published, so that all of them are open at once; then one action of each
// run in turn (round robin) for Options.Duration, at Options.Rate events per
// second or as fast as the pipeline absorbs them; after the measurement, one
// run.finish per run. A run works in cycles (read a file, prove the edit when
// the file is under payments/, edit, test until the tests pass, commit,
// deploy every fourth cycle), which satisfies the rules of examples/rules.
// With probability Options.Violations an action is a mistake instead: a
// tool call writing config/.env, an edit of .env, a payments/ edit without a
// proof, or an action consuming an artifact nobody produced. Each run makes
// each kind at most once, so the mistakes are spread over the whole load and
// each breaks a rule that was not broken yet: every one gives at least one
// violated verdict, hence an alert. The events are a
// function of the seed and of how many were published.
//
// # What is measured
//
//   - Latency: the time each event is handed to the publisher is kept
//     (keyed by run and seq); a verdict, received on a core NATS subscription
//     to <prefix>.verdicts.>, counts receipt time − publish time of the event
//     with the verdict's runId and seq; an alert, received on
//     <prefix>.alerts.>, the same for the verdict it carries.
//   - Throughput: the events acknowledged by the EVENTS stream and then
//     processed by the workers — their verdicts stored and the events acked
//     by the workers' checkpoint (every durable partition consumer
//     <prefix>-p<k> has nothing pending and nothing waiting for an ack) —
//     divided by the seconds from the first publish until then.
//   - Open runs: the runs of this load in the open runs of the workers'
//     latest checkpoints, once everything is processed.
//
// Publishing is bounded twice: by the publisher's events in flight
// (Options.MaxInFlight), and by
// Options.MaxBacklog, the events stored but not yet delivered to a worker
// (polled from the partition consumers every 50ms). Every wait is bounded:
// the load stops by itself.
package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

// Options configure a load. Zero values take the defaults of the fields.
type Options struct {
	Subjects schema.Subjects
	// Runs is the number of concurrent runs (default 1000).
	Runs int
	// Duration is how long actions are published (default 10s).
	Duration time.Duration
	// Rate is the events per second to publish; 0 publishes as fast as the
	// stream acknowledges them and the backlog allows.
	Rate float64
	// Violations is the chance that an action is a mistake (GenConfig).
	Violations float64
	// Seed makes the load reproducible.
	Seed uint64
	// RunPrefix starts every runId (default "bench-r"). Against a server
	// that keeps its streams, use a new one for each load: a runId seen
	// before ended, and its event ids are still in the duplicate window.
	RunPrefix string
	// MaxInFlight bounds the events published but not yet acknowledged by
	// the stream (default 4096; the publisher's own default, 512, makes one
	// publisher the bottleneck: see docs/LOAD.md).
	MaxInFlight int
	// MaxBacklog holds publishing back while more events than this are
	// stored but not yet delivered to a worker (default 50,000).
	MaxBacklog int
	// DrainTimeout bounds each wait for the workers: to consume what was
	// published, and to make room under MaxBacklog (default 60s).
	DrainTimeout time.Duration
	// AlertConsumer is the durable consumer of the alert stage on the
	// VERDICTS stream (default <prefix>-alerts); the measurement waits until
	// it has forwarded every verdict.
	AlertConsumer string
	// Measure, when set, is called at the measuring point (the load
	// processed, its runs still open) to fill in what only the caller can
	// measure, such as the resident memory of the server.
	Measure func(*Result)
	// CPUTime, when set, reads the CPU time (user and system) of the
	// process that holds the pipeline; the load reads it at the first
	// publish and at the measuring point (Result.CPUSeconds).
	CPUTime func() time.Duration
	// Progress, when set, receives a line about every second of the load.
	Progress io.Writer
	// KeepSamples keeps every latency sample in Result.Samples, to see
	// when the slow ones happened.
	KeepSamples bool
	// Webhook subscribes a loopback webhook to every violation through the
	// alert stage's subscriptions for the load, and measures publish →
	// webhook received (Result.Webhook).
	Webhook bool
}

func (o *Options) fill() {
	if o.Subjects.Prefix == "" {
		o.Subjects.Prefix = schema.DefaultPrefix
	}
	if o.Subjects.Partitions == 0 {
		o.Subjects.Partitions = schema.DefaultPartitions
	}
	if o.Runs == 0 {
		o.Runs = 1000
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.RunPrefix == "" {
		o.RunPrefix = "bench-r"
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 4096
	}
	if o.MaxBacklog == 0 {
		o.MaxBacklog = 50_000
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = 60 * time.Second
	}
	if o.AlertConsumer == "" {
		o.AlertConsumer = o.Subjects.Prefix + "-alerts"
	}
}

// maxLoad bounds a load's length: publish times are kept in microseconds
// in a uint32.
const maxLoad = time.Hour

func (o *Options) check() error {
	switch {
	case o.Runs < 1:
		return fmt.Errorf("loadgen: runs must be at least 1, got %d", o.Runs)
	case o.Duration < 0 || o.Duration > maxLoad:
		return fmt.Errorf("loadgen: duration must be between 0 and %s, got %s", maxLoad, o.Duration)
	case o.Rate < 0:
		return fmt.Errorf("loadgen: rate must not be negative, got %g", o.Rate)
	case o.Violations < 0 || o.Violations > 1:
		return fmt.Errorf("loadgen: violations must be between 0 and 1, got %g", o.Violations)
	case o.MaxInFlight < 1:
		return fmt.Errorf("loadgen: in flight must be at least 1, got %d", o.MaxInFlight)
	case o.MaxBacklog < 1:
		return fmt.Errorf("loadgen: max backlog must be at least 1, got %d", o.MaxBacklog)
	}
	return nil
}

// Result is what a load measured. Its JSON form is the one `ponens bench
// --json` prints; the fields without a JSON name are details for the
// report.
type Result struct {
	// Events is the number of events of the load (run.start and actions)
	// acknowledged by the stream and processed by the workers.
	Events int64 `json:"events"`
	// Seconds is the time from the first publish until the workers had
	// processed them.
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	// Verdict is publish → verdict received, Alert publish → alert
	// received, in milliseconds.
	Verdict Latency `json:"verdict_latency_ms"`
	Alert   Latency `json:"alert_latency_ms"`
	// Webhook is publish → webhook received, with Options.Webhook.
	Webhook Latency `json:"webhook_latency_ms"`
	// OpenRuns is the number of the load's runs open in the workers at the
	// measuring point.
	OpenRuns int `json:"open_runs"`
	// RSSBytes is the resident memory Options.Measure reported (0 when it
	// measured none).
	RSSBytes int64 `json:"rss_bytes"`
	// CPUSeconds is the CPU time Options.CPUTime measured from the first
	// publish to the measuring point (0 when it measured none): with
	// Events, the cost of an event on a machine shared with other work.
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// Store says whether the embedded pipeline ran its sink into the
	// embedded store, and if not, why; filled in by the caller (empty for
	// a remote server).
	Store string `json:"store,omitempty"`
	// StoredEvents and StoredVerdicts are the rows the sink had committed
	// from the EVENTS and VERDICTS streams at the measuring point; with
	// Events, how far the store was behind. Filled in by the caller's
	// Measure (absent without the store).
	StoredEvents   uint64 `json:"stored_events,omitempty"`
	StoredVerdicts uint64 `json:"stored_verdicts,omitempty"`

	Runs           int           `json:"-"`
	Published      int64         `json:"-"` // events of the load handed to the publisher
	PublishSeconds float64       `json:"-"` // first publish → last acknowledgement
	HeldBack       time.Duration `json:"-"` // time publishing waited for the backlog
	MaxBacklogSeen uint64        `json:"-"` // the largest backlog polled
	Mistakes       int           `json:"-"` // mistakes generated: the expected violations
	Violated       int           `json:"-"` // violated verdicts received
	Dropped        int           `json:"-"` // verdicts and alerts the subscriptions dropped (slow consumer)
	Missed         int           `json:"-"` // verdicts or alerts of the load with no known publish time
	AlertStage     bool          `json:"-"` // the alert consumer exists
	Finished       int           `json:"-"` // runs closed after the measurement (run.finish stored)
	RecorderBytes  int64         `json:"-"` // memory of the publish-time bookkeeping
	PeakRSSBytes   int64         `json:"-"` // filled in by Options.Measure
	HeapBytes      int64         `json:"-"` // filled in by Options.Measure
	Samples        []Sample      `json:"-"` // with Options.KeepSamples
}

// ErrNotDrained is returned, wrapped, when the workers did not process the
// load within Options.DrainTimeout.
var ErrNotDrained = errors.New("the workers did not process the load in time")

// Run publishes the load on nc, listens for its verdicts and alerts on
// sub, and returns what it measured. Workers must be consuming every
// partition of opts.Subjects (their durable consumers <prefix>-p<k> must
// exist). It stops by itself: after the actions of opts.Duration, the
// drain (bounded by opts.DrainTimeout) and the run.finish events; or when
// ctx ends.
func Run(ctx context.Context, nc, sub *nats.Conn, opts Options) (Result, error) {
	opts.fill()
	if err := opts.check(); err != nil {
		return Result{}, err
	}
	l, err := newLoad(nc, sub, opts)
	if err != nil {
		return Result{}, err
	}
	defer l.close()
	return l.run(ctx)
}

// load is one run of the load generator.
type load struct {
	opts  Options
	gen   *Generator
	rec   *recorder
	js    natsjs.JetStream // on the publishing connection
	query natsjs.JetStream // on the listening connection: consumer and KV reads
	pub   *transport.Publisher
	subs  []*nats.Subscription

	backlog  atomic.Uint64 // Σ NumPending of the partition consumers, last polled
	maxSeen  atomic.Uint64
	violated atomic.Int64
	stopPoll func()
}

func newLoad(nc, sub *nats.Conn, opts Options) (*load, error) {
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncTimeout(transport.DefaultTimeout),
		natsjs.WithPublishAsyncMaxPending(opts.MaxInFlight))
	if err != nil {
		return nil, err
	}
	query, err := natsjs.New(sub)
	if err != nil {
		return nil, err
	}
	l := &load{
		opts:  opts,
		gen:   NewGenerator(GenConfig{Runs: opts.Runs, Seed: opts.Seed, Violations: opts.Violations, RunPrefix: opts.RunPrefix}),
		rec:   newRecorder(opts.Runs, opts.KeepSamples),
		js:    js,
		query: query,
	}
	for _, s := range []struct {
		subject string
		alert   bool
	}{{opts.Subjects.VerdictsIn(), false}, {opts.Subjects.Prefix + ".alerts.>", true}} {
		ns, err := sub.Subscribe(s.subject, func(m *nats.Msg) { l.receive(m, s.alert) })
		if err != nil {
			l.close()
			return nil, fmt.Errorf("loadgen: subscribe %s: %w", s.subject, err)
		}
		// Bounded: a burst beyond this is dropped and counted, not queued.
		if err := ns.SetPendingLimits(1<<20, 256<<20); err != nil {
			l.close()
			return nil, err
		}
		l.subs = append(l.subs, ns)
	}
	if err := sub.Flush(); err != nil {
		l.close()
		return nil, fmt.Errorf("loadgen: subscribe: %w", err)
	}
	l.pub = transport.NewPublisher(js, opts.Subjects, transport.PublisherOptions{MaxInFlight: opts.MaxInFlight})
	return l, nil
}

func (l *load) close() {
	if l.stopPoll != nil {
		l.stopPoll()
	}
	if l.pub != nil {
		_ = l.pub.Close()
	}
	for _, s := range l.subs {
		_ = s.Unsubscribe()
	}
}

// receive records the latency of a verdict or an alert.
func (l *load) receive(m *nats.Msg, alert bool) {
	now := time.Now()
	var v struct {
		RunID  string               `json:"runId"`
		Seq    uint64               `json:"seq"`
		Status schema.VerdictStatus `json:"status"`
	}
	if alert {
		var a struct {
			Verdict *struct {
				RunID string `json:"runId"`
				Seq   uint64 `json:"seq"`
			} `json:"verdict"`
		}
		if json.Unmarshal(m.Data, &a) != nil || a.Verdict == nil {
			return
		}
		v.RunID, v.Seq = a.Verdict.RunID, a.Verdict.Seq
	} else if json.Unmarshal(m.Data, &v) != nil {
		return
	}
	i := l.gen.RunIndex(v.RunID)
	if i < 0 {
		return // not this load's
	}
	if v.Status == schema.StatusViolated {
		l.violated.Add(1)
	}
	l.rec.received(i, v.Seq, now, alert)
}

// consumerName is the durable consumer of partition k (monitor/worker).
func (l *load) consumerName(k int) string { return fmt.Sprintf("%s-p%d", l.opts.Subjects.Prefix, k) }

// partitions returns Σ NumPending and Σ NumAckPending over the partition
// consumers.
func (l *load) partitions(ctx context.Context) (pending, ackPending uint64, err error) {
	for k := range l.opts.Subjects.Partitions {
		c, err := l.query.Consumer(ctx, schema.StreamEvents, l.consumerName(k))
		if err != nil {
			return 0, 0, fmt.Errorf("consumer %s of partition %d: %w", l.consumerName(k), k, err)
		}
		info := c.CachedInfo()
		pending += info.NumPending
		ackPending += uint64(info.NumAckPending)
	}
	return pending, ackPending, nil
}

// waitPartitions waits until every partition's consumer answers, for at
// most within: on a loaded cluster a consumer's info request can time out
// while its replicas elect a leader, and a worker started a moment ago may
// not have created its consumer yet.
func (l *load) waitPartitions(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, done := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := l.partitions(c)
		done()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// poll keeps l.backlog up to date every 50ms until the returned stop is
// called.
func (l *load) poll(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			c, done := context.WithTimeout(ctx, 2*time.Second)
			pending, _, err := l.partitions(c)
			done()
			if err == nil { // a consumer being recreated: keep the last figure
				l.backlog.Store(pending)
				if pending > l.maxSeen.Load() {
					l.maxSeen.Store(pending)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// publisher paces the load: Rate, the backlog, and the report of progress.
type publisher struct {
	l        *load
	start    time.Time // of the schedule: shifted by the time held back
	n        int64     // events published
	heldBack time.Duration
	report   time.Time
	phase    string
}

// send publishes ev of run i when it is due and the backlog has room.
func (p *publisher) send(ctx context.Context, i int, ev *schema.Event, paced bool) error {
	l := p.l
	if paced && l.opts.Rate > 0 {
		due := p.start.Add(time.Duration(float64(p.n) / l.opts.Rate * float64(time.Second)))
		if wait := time.Until(due); wait > 200*time.Microsecond { // not a timer per event
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	if l.backlog.Load() > uint64(l.opts.MaxBacklog) {
		held := time.Now()
		for l.backlog.Load() > uint64(l.opts.MaxBacklog) {
			if time.Since(held) > l.opts.DrainTimeout {
				return fmt.Errorf("loadgen: %w: more than %d events waited for a worker for %s", ErrNotDrained, l.opts.MaxBacklog, l.opts.DrainTimeout)
			}
			if err := sleep(ctx, 2*time.Millisecond); err != nil {
				return err
			}
		}
		d := time.Since(held)
		p.heldBack += d
		p.start = p.start.Add(d) // no catching up in a burst afterwards
	}
	now := time.Now()
	l.rec.published(i, ev.Seq, now)
	if err := l.pub.Publish(ctx, ev); err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	p.n++
	if l.opts.Progress != nil && now.Sub(p.report) >= time.Second {
		if !p.report.IsZero() {
			fmt.Fprintf(l.opts.Progress, "%6.1fs  %-7s %9d published  backlog %7d  held back %s\n",
				now.Sub(l.rec.t0).Seconds(), p.phase, p.n, l.backlog.Load(), p.heldBack.Round(time.Millisecond))
		}
		p.report = now
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (l *load) run(ctx context.Context) (Result, error) {
	res := Result{Runs: l.opts.Runs}
	if err := transport.CheckPartitions(ctx, l.query, l.opts.Subjects); err != nil {
		return res, fmt.Errorf("loadgen: %w (set --partitions to the stream's)", err)
	}
	if err := l.waitPartitions(ctx, 20*time.Second); err != nil {
		return res, fmt.Errorf("loadgen: no worker consumes the events (is `ponens serve` running with --prefix %s and --partitions %d?): %w",
			l.opts.Subjects.Prefix, l.opts.Subjects.Partitions, err)
	}
	_, err := l.query.Consumer(ctx, schema.StreamVerdicts, l.opts.AlertConsumer)
	res.AlertStage = err == nil
	if l.opts.Webhook {
		hookCtx, stopHook := context.WithCancel(ctx)
		defer stopHook()
		if err := l.startWebhook(hookCtx); err != nil {
			return res, err
		}
	}
	l.stopPoll = l.poll(ctx)

	// The measured load: every run.start, then actions for Duration.
	var cpu0 time.Duration
	if l.opts.CPUTime != nil {
		cpu0 = l.opts.CPUTime()
	}
	p := &publisher{l: l, phase: "start", start: time.Now()}
	for i := range l.opts.Runs {
		if err := p.send(ctx, i, l.gen.Start(i), true); err != nil {
			return res, err
		}
	}
	p.phase = "actions"
	for end := time.Now().Add(l.opts.Duration); time.Now().Before(end); {
		i, ev := l.gen.Next()
		if err := p.send(ctx, i, ev, true); err != nil {
			return res, err
		}
	}
	if err := l.pub.Flush(ctx); err != nil {
		return res, fmt.Errorf("loadgen: %w", err)
	}
	first := l.rec.t0
	res.Published = p.n
	res.PublishSeconds = time.Since(first).Seconds()
	res.HeldBack = p.heldBack
	res.Mistakes = l.gen.Mistakes()
	stats := l.pub.Stats()
	acked := stats.Stored + stats.Duplicates

	// The measuring point: the workers have processed everything.
	drained, left, err := l.drain(ctx)
	end := time.Now()
	if err != nil {
		return res, err
	}
	if l.opts.CPUTime != nil {
		res.CPUSeconds = (l.opts.CPUTime() - cpu0).Seconds()
	}
	res.Events = acked
	if !drained {
		res.Events = max(acked-int64(left), 0)
	}
	res.Seconds = end.Sub(first).Seconds()
	if res.Seconds > 0 {
		res.EventsPerSec = float64(res.Events) / res.Seconds
	}
	if res.AlertStage {
		l.waitAlerts(ctx)
	}
	res.OpenRuns, err = l.openRuns(ctx)
	if err != nil {
		return res, err
	}
	res.RecorderBytes = l.rec.bytes()
	if l.opts.Measure != nil {
		l.opts.Measure(&res)
	}
	verdicts, alerts, webhooks, samples, missed := l.rec.stop()
	res.Verdict, res.Alert, res.Webhook, res.Samples, res.Missed = Summarize(verdicts), Summarize(alerts), Summarize(webhooks), samples, missed
	res.Violated = int(l.violated.Load())
	res.MaxBacklogSeen = l.maxSeen.Load()
	for _, s := range l.subs {
		if n, err := s.Dropped(); err == nil {
			res.Dropped += n
		}
	}
	if !drained {
		return res, fmt.Errorf("loadgen: %w: %d events were still pending after %s", ErrNotDrained, left, l.opts.DrainTimeout)
	}

	// Close the runs, unmeasured, and let the workers process that too, so
	// that they stop (or go on serving) with nothing left.
	p.phase = "closing"
	for i := range l.opts.Runs {
		if err := p.send(ctx, i, l.gen.Finish(i), false); err != nil {
			return res, err
		}
	}
	if err := l.pub.Flush(ctx); err != nil {
		return res, fmt.Errorf("loadgen: closing the runs: %w", err)
	}
	res.Finished = l.opts.Runs
	closed, left, err := l.drain(ctx)
	if err == nil && !closed {
		err = fmt.Errorf("loadgen: %w: closing the runs, %d events were still pending after %s", ErrNotDrained, left, l.opts.DrainTimeout)
	}
	return res, err
}

// drain waits until every partition consumer has nothing pending and
// nothing waiting for an ack, for at most DrainTimeout. It returns whether
// it did, and otherwise how many events were left.
func (l *load) drain(ctx context.Context) (bool, uint64, error) {
	deadline := time.Now().Add(l.opts.DrainTimeout)
	var left uint64
	for {
		pending, ack, err := l.partitions(ctx)
		if err == nil {
			left = pending + ack
			if left == 0 {
				return true, 0, nil
			}
		}
		if time.Now().After(deadline) {
			return false, left, nil
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return false, left, err
		}
	}
}

// waitAlerts waits, for at most 10 seconds, until the alert stage has
// forwarded every verdict, and then a little for the alerts to arrive.
func (l *load) waitAlerts(ctx context.Context) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := l.query.Consumer(ctx, schema.StreamVerdicts, l.opts.AlertConsumer)
		if err == nil && c.CachedInfo().NumPending == 0 && c.CachedInfo().NumAckPending == 0 {
			break
		}
		if sleep(ctx, 10*time.Millisecond) != nil {
			return
		}
	}
	_ = sleep(ctx, 100*time.Millisecond) // for the last alerts to arrive

}

// checkpoint is the part of a worker's checkpoint (monitor/worker) this
// package reads: the runs open at its stream sequence.
type checkpoint struct {
	Runs map[string]json.RawMessage `json:"runs"`
}

// openRuns counts the load's runs open in the workers' checkpoints, which
// the workers write to the <prefix>_checkpoints bucket under p<k> before they
// ack: once every event is acked, they hold the runs open at the end.
func (l *load) openRuns(ctx context.Context) (int, error) {
	kv, err := l.query.KeyValue(ctx, l.opts.Subjects.Prefix+"_checkpoints")
	if err != nil {
		return 0, fmt.Errorf("loadgen: the workers' checkpoints: %w", err)
	}
	open := 0
	for k := range l.opts.Subjects.Partitions {
		e, err := kv.Get(ctx, fmt.Sprintf("p%d", k))
		if errors.Is(err, natsjs.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("loadgen: checkpoint of partition %d: %w", k, err)
		}
		var ck checkpoint
		if err := json.Unmarshal(e.Value(), &ck); err != nil {
			return 0, fmt.Errorf("loadgen: checkpoint of partition %d: %w", k, err)
		}
		for id := range ck.Runs {
			if l.gen.RunIndex(id) >= 0 {
				open++
			}
		}
	}
	return open, nil
}
