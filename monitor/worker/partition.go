package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	segjson "github.com/segmentio/encoding/json"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/monitor/remote"
	"github.com/ponens/ponens/schema"
)

// checkpoint is what a partition stores in the checkpoints bucket: the
// stream sequence up to which everything is processed, verdicts stored and
// acked, and the runs open at that point. A run is restored by replaying its
// events from the stream (from First up to Seq) through a fresh monitor with
// verdicts suppressed: replay is deterministic, so the state is exactly the
// one that was checkpointed, with no serialised form of monitor state to
// version.
type checkpoint struct {
	Seq   uint64             `json:"seq"`
	Runs  map[string]runMark `json:"runs"`
	Ended []string           `json:"ended,omitempty"` // oldest first, at most maxEnded
	// EndedHow says how each ended run ended ("run.finish at seq 2"), so a
	// refusal after a restore still names it.
	EndedHow map[string]string `json:"endedHow,omitempty"`
	// Rules are the verdict ids of the rules in force when it was written.
	// Replay sends the verdicts of rules in force now but not then (new
	// rules, new versions), deduplicated by message id like any other.
	Rules []string `json:"rules"`
}

// runMark locates an open run: the stream sequence of its first event and
// the next event seq it expects (past a gap the worker gave up on).
type runMark struct {
	First uint64 `json:"first"`
	Next  uint64 `json:"next"`
	// Skipped are the seq ranges (first, last) the run gave up waiting for
	// (GapTimeout), so that replay skips them where the run did.
	Skipped [][2]uint64 `json:"skipped,omitempty"`
	// Dropped are the stream sequences of the run's events refused because
	// its out-of-order buffer was full: replay, which holds more, skips them.
	Dropped []uint64 `json:"dropped,omitempty"`
}

// runState is one open run of a partition.
type runState struct {
	run      *monitor.Run
	first    uint64 // stream sequence of its first event
	next     uint64 // next event seq expected
	buffer   map[uint64]buffered
	gapSince time.Time
	last     time.Time
	skipped  [][2]uint64 // seq ranges given up on, ascending (runMark.Skipped)
	dropped  []uint64    // stream sequences refused on overflow (runMark.Dropped)
	agent    string      // the agent run.start named
	project  string      // the project run.start's extra fields named
	// sums[seq-1] is the FNV-1a hash of the bytes of event seq as applied
	// (0: not applied), to tell a repeat from a conflicting duplicate.
	sums []uint64
}

// maxSums bounds runState.sums: the events past this seq of a run are not
// compared with their duplicates (at most 512 KiB per run).
const maxSums = 1 << 16

// sum is the hash runState.sums keeps of an event's bytes (never 0).
func sum(data []byte) uint64 {
	h := fnv.New64a()
	h.Write(data)
	return max(h.Sum64(), 1)
}

// conflicts reports whether data is not the event applied as seq, whose
// bytes the run remembers; false when it remembers none.
func (rs *runState) conflicts(seq uint64, data []byte) bool {
	if seq == 0 || seq > uint64(len(rs.sums)) || rs.sums[seq-1] == 0 {
		return false
	}
	return rs.sums[seq-1] != sum(data)
}

// dropBefore forgets buffered events below seq, which can no longer be
// applied (next never moves back), and reports whether the buffer is then
// empty, in which case the run no longer waits for anything.
func (rs *runState) dropBefore(seq uint64, id string, p *partition) (empty bool) {
	for s := range rs.buffer {
		if s < seq {
			delete(rs.buffer, s)
		}
	}
	if len(rs.buffer) > 0 {
		return false
	}
	rs.gapSince, rs.buffer = time.Time{}, nil
	if p.gapped[id] == rs {
		delete(p.gapped, id)
	}
	return true
}

// skippedRange returns the range of seqs given up on that holds seq.
func (rs *runState) skippedRange(seq uint64) ([2]uint64, bool) {
	for _, r := range rs.skipped {
		if seq >= r[0] && seq <= r[1] {
			return r, true
		}
	}
	return [2]uint64{}, false
}

// pastSkips moves next past the seqs the run gave up waiting for: replay
// then applies exactly the events the run applied, whatever order and time
// they arrived in.
func (rs *runState) pastSkips() {
	for _, r := range rs.skipped {
		if rs.next >= r[0] && rs.next <= r[1] {
			rs.next = r[1] + 1
		}
	}
}

type buffered struct {
	ev  *schema.Event
	raw []byte
}

// decideReq asks the partition for a decision on a proposed step.
type decideReq struct {
	runID  string
	action *schema.Action
	newRun bool     // judge a run the partition does not know as a new one
	reply  chan any // a monitor.Decision, a retryLater or a refusal
}

// refusal is the answer to a decision request about a run that no step
// can follow (it has ended) or that the partition does not know, with the
// code remote.Decide turns into its sentinel error.
type refusal struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// retryLater is the answer to a decision request the partition cannot
// judge now (it is moving, busy, or still rebuilding its runs): the client
// asks again (remote.Decide does, until its context ends).
type retryLater struct {
	Error string `json:"error"`
	Retry bool   `json:"retry"`
}

// partition processes one partition of the events stream. Its loop owns
// all of its state; other goroutines talk to it through channels.
type partition struct {
	w          *Worker
	k          int
	eng        *monitor.Engine
	fileIDs    map[string]string // verdict id → id in the file, for later versions
	severity   map[string]string // verdict id → the rule's declared severity
	runs       map[string]*runState
	gapped     map[string]*runState // runs with events waiting for a missing seq
	idleScan   time.Time            // when sweep last looked for idle runs
	ended      map[string]string    // ended run → how it ended ("" when a checkpoint of an older version said it did)
	endedOrder []string             // ended runs, oldest first

	consumer jetstream.Consumer
	lastSeq  uint64        // stream sequence of the last message processed
	dseq     uint64        // consumer sequence of the last delivery handled
	lastMsg  jetstream.Msg // the message to ack at the next checkpoint
	replayTo uint64        // messages up to here restore state only
	marks    map[string]runMark
	fresh    map[string]bool // while replaying: rules whose verdicts replay sends
	ckptAt   time.Time
	pub      []jetstream.PubAckFuture
	ckBuf    []byte // the last checkpoint's encoding, reused
	dirty    bool   // the sweep changed a run since the last checkpoint

	decide chan decideReq
	sub    *nats.Subscription

	mu      sync.Mutex
	rev     uint64 // lease revision
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	publish bool
}

func newPartition(ctx context.Context, w *Worker, k int, rev uint64) (*partition, error) {
	set, fileIDs := w.currentRules()
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		return nil, fmt.Errorf("partition %d: %w", k, errors.Join(errs...))
	}
	severity := map[string]string{}
	for _, r := range set.Rules {
		if r.Severity != "" {
			severity[r.ID] = r.Severity
		}
	}
	p := &partition{w: w, k: k, eng: eng, fileIDs: fileIDs, severity: severity, rev: rev, runs: map[string]*runState{}, gapped: map[string]*runState{}, ended: map[string]string{},
		decide: make(chan decideReq), done: make(chan struct{})}
	ck, err := p.loadCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	p.lastSeq, p.replayTo, p.marks = ck.Seq, ck.Seq, ck.Runs
	if ck.Rules != nil && len(ck.Runs) > 0 {
		for _, r := range eng.Rules() {
			if !slices.Contains(ck.Rules, r.ID) {
				if p.fresh == nil {
					p.fresh = map[string]bool{}
				}
				p.fresh[r.ID] = true
			}
		}
	}
	for _, id := range ck.Ended {
		p.end(id, ck.EndedHow[id])
	}
	if err := p.dropExpired(ctx); err != nil {
		return nil, err
	}
	start := ck.Seq + 1
	for _, m := range p.marks {
		start = min(start, m.First)
	}
	name := fmt.Sprintf("%s-p%d", w.opts.Subjects.Prefix, k)
	if err := w.js.DeleteConsumer(ctx, schema.StreamEvents, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	p.consumer, err = w.js.CreateConsumer(ctx, schema.StreamEvents, jetstream.ConsumerConfig{
		Durable: name, FilterSubject: w.opts.Subjects.Partition(k), AckPolicy: jetstream.AckAllPolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		MaxAckPending: -1, AckWait: time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("partition %d: consumer: %w", k, err)
	}
	p.sub, err = w.nc.Subscribe(w.opts.Subjects.Decide(k), p.serveDecide)
	if err != nil {
		return nil, err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.loop(loopCtx)
	return p, nil
}

// dropExpired ends the open runs of the checkpoint whose first events the
// stream no longer holds (removed by its MaxAge, nats.max_age): replaying
// what is left would judge them on part of their history, and could find
// violations that did not happen. Each is logged at error level, and its
// later events go to the dead letters as after-end.
func (p *partition) dropExpired(ctx context.Context) error {
	if len(p.marks) == 0 {
		return nil
	}
	st, err := p.w.js.Stream(ctx, schema.StreamEvents)
	if err != nil {
		return fmt.Errorf("partition %d: stream %s: %w", p.k, schema.StreamEvents, err)
	}
	first := st.CachedInfo().State.FirstSeq
	for id, m := range p.marks {
		if m.First >= first {
			continue
		}
		p.w.opts.Logger.Error("worker: an open run's first events expired before its partition could replay them (nats.max_age); the run is ended, its later events go to the dead letters",
			"partition", p.k, "run", id, "first", m.First, "stream_first", first)
		delete(p.marks, id)
		p.end(id, "its first events expired from the stream (nats.max_age) before a replay")
	}
	return nil
}

func (p *partition) loadCheckpoint(ctx context.Context) (checkpoint, error) {
	var ck checkpoint
	e, err := p.w.checkpoints.Get(ctx, leaseKey(p.k))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ck, nil
	}
	if err != nil {
		return ck, err
	}
	if err := json.Unmarshal(e.Value(), &ck); err != nil {
		return ck, fmt.Errorf("partition %d: checkpoint: %w", p.k, err)
	}
	return ck, nil
}

func (p *partition) renew(ctx context.Context) error {
	p.mu.Lock()
	rev := p.rev
	p.mu.Unlock()
	next, err := p.w.leases.Update(ctx, leaseKey(p.k), []byte(p.w.opts.ID), rev)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.rev = next
	p.mu.Unlock()
	return nil
}

func (p *partition) leaseRev() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rev
}

func (p *partition) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// stop ends the loop; graceful first writes a last checkpoint.
func (p *partition) stop(graceful bool) {
	p.mu.Lock()
	p.publish = graceful
	p.mu.Unlock()
	_ = p.sub.Unsubscribe()
	p.cancel()
	<-p.done
}

func (p *partition) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.w.opts.Logger.Error("worker: partition failed", "partition", p.k, "err", err)
}

func (p *partition) loop(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(max(p.w.opts.CheckpointEvery/2, 10*time.Millisecond))
	defer tick.Stop()
	p.ckptAt = time.Now()
	for ctx.Err() == nil && !p.failed() {
		select {
		case req := <-p.decide:
			if p.marks != nil { // a run may be half rebuilt: no answer from it
				req.reply <- retryLater{"partition restoring its runs; retry", true}
			} else {
				req.reply <- p.answer(req)
			}
			continue
		case <-tick.C:
			p.sweep(ctx)
			// A gap given up on or an idle end is written down at once: a
			// crash must not let a takeover apply a late event instead.
			if p.dirty || time.Since(p.ckptAt) >= p.w.opts.CheckpointEvery {
				if err := p.checkpoint(ctx); err != nil && ctx.Err() == nil {
					p.fail(err)
				}
			}
			continue
		default:
		}
		batch, err := p.consumer.Fetch(p.w.opts.FetchBatch, jetstream.FetchMaxWait(p.w.fetchWait))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoMessages) {
				p.fail(err)
			}
			continue
		}
		n := 0
		for msg := range batch.Messages() {
			if !p.failed() { // what follows a failure waits for the restart
				p.handle(ctx, msg)
			}
			n++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoMessages) {
			p.fail(err)
		}
		if n == 0 && p.marks != nil && p.replayed(ctx) {
			p.resume() // nothing after the checkpoint yet: restoring is done
		}
	}
	p.mu.Lock()
	graceful := p.publish && p.err == nil
	p.mu.Unlock()
	if graceful {
		c, cancel := context.WithTimeout(context.Background(), p.w.opts.LeaseTTL)
		defer cancel()
		if err := p.checkpoint(c); err != nil {
			p.w.opts.Logger.Warn("worker: last checkpoint", "partition", p.k, "err", err)
		}
	}
}

// handle processes one message of the partition, in stream order.
func (p *partition) handle(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		p.fail(err)
		return
	}
	if d := md.Sequence.Consumer; d > p.dseq+1 {
		// The server delivered messages this partition never received (a
		// connection lost, or a fetch ended, while they were on the way).
		// Acking past them would ack them too (ack all), and they would never
		// come again: start again from the checkpoint instead.
		p.fail(fmt.Errorf("partition %d: the consumer's deliveries %d to %d never arrived; starting again from the checkpoint", p.k, p.dseq+1, d-1))
		return
	}
	p.dseq = md.Sequence.Consumer // a new consumer leader may deliver again from an earlier one
	seq := md.Sequence.Stream
	replay := seq <= p.replayTo
	if !replay && p.marks != nil {
		p.resume()
	}
	p.lastSeq, p.lastMsg = seq, msg
	data := msg.Data()
	ev, reason, err := p.decode(data)
	if err == nil {
		if err = sameRun(msg.Subject(), ev); err != nil {
			reason = schema.ReasonRunMismatch
		}
	}
	if err != nil {
		if !replay {
			p.dead(ctx, reason, err, data)
		}
		return
	}
	rs := p.runs[ev.RunID]
	if replay {
		mark, open := p.marks[ev.RunID]
		if !open || seq < mark.First {
			return // settled before the checkpoint
		}
	}
	if rs == nil {
		if _, done := p.ended[ev.RunID]; done {
			if !replay {
				p.dead(ctx, schema.ReasonAfterEnd, fmt.Errorf("runId %q, seq %d: the run has ended", ev.RunID, ev.Seq), data)
			}
			return
		}
		rs = &runState{run: p.eng.NewRun(ev.RunID), first: seq, next: 1}
		if replay {
			rs.skipped, rs.dropped = p.marks[ev.RunID].Skipped, p.marks[ev.RunID].Dropped
			rs.pastSkips()
		}
		p.runs[ev.RunID] = rs
	}
	rs.last = time.Now()
	if replay && slices.Contains(rs.dropped, seq) {
		return // the run refused it (overflow): so does replay
	}
	switch {
	case ev.Seq < rs.next:
		if r, late := rs.skippedRange(ev.Seq); late && !replay { // never applied: not a duplicate
			p.dead(ctx, schema.ReasonSeqGap, fmt.Errorf("runId %q, seq %d: arrived after the run stopped waiting for seq %d to %d", ev.RunID, ev.Seq, r[0], r[1]), data)
		} else if !replay && rs.conflicts(ev.Seq, data) {
			p.dead(ctx, schema.ReasonConflictingDuplicate, fmt.Errorf("runId %q, seq %d: %w: the run applied other content under this seq", ev.RunID, ev.Seq, schema.ErrConflictingDuplicate), data)
		}
		return // a duplicate: already applied
	case ev.Seq > rs.next:
		if b, dup := rs.buffer[ev.Seq]; dup {
			if !replay && !bytes.Equal(b.raw, data) {
				p.dead(ctx, schema.ReasonConflictingDuplicate, fmt.Errorf("runId %q, seq %d: %w: other content under this seq waits to be applied", ev.RunID, ev.Seq, schema.ErrConflictingDuplicate), data)
			}
			return
		}
		if _, skipped := rs.skippedRange(ev.Seq); skipped && replay { // the run never applied it
			return
		}
		if len(rs.buffer) >= p.w.opts.MaxBuffered && !replay { // replay holds what the run held, and more only for a moment
			p.dead(ctx, schema.ReasonSeqGap, fmt.Errorf("runId %q, seq %d: %d events already wait for seq %d", ev.RunID, ev.Seq, len(rs.buffer), rs.next), data)
			rs.dropped = append(rs.dropped, seq)
			return
		}
		if rs.buffer == nil {
			rs.buffer = map[uint64]buffered{}
		}
		rs.buffer[ev.Seq] = buffered{ev: ev, raw: data}
		if rs.gapSince.IsZero() {
			rs.gapSince = time.Now()
			p.gapped[ev.RunID] = rs
		}
		return
	}
	p.apply(ctx, ev.RunID, rs, ev, data, replay)
	p.drain(ctx, ev.RunID, rs, replay)
}

// replayed reports whether every event up to the checkpoint has been
// handled: an empty fetch alone does not say so (a fetch can give up before
// the server delivers), but a consumer with nothing left to deliver does.
func (p *partition) replayed(ctx context.Context) bool {
	info, err := p.consumer.Info(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.w.opts.Logger.Warn("worker: consumer info", "partition", p.k, "err", err)
		}
		return false
	}
	return info.NumPending == 0 || info.Delivered.Stream >= p.replayTo
}

// resume is the end of replay: runs the checkpoint had moved past a gap
// move past it again, without repeating what was already reported.
func (p *partition) resume() {
	for id, m := range p.marks {
		if rs := p.runs[id]; rs != nil && rs.next < m.Next {
			rs.next = m.Next
			rs.dropBefore(rs.next, id, p)
			p.drain(context.Background(), id, rs, true)
		}
	}
	p.marks, p.fresh = nil, nil
}

// sendFresh sends, of verdicts replay made, those of the rules that were
// not in force when the checkpoint was written; at[i] is the time of the
// event vs[i] is on.
func (p *partition) sendFresh(ctx context.Context, vs []schema.VerdictEvent, at []time.Time) {
	for i := range vs {
		if p.fresh[vs[i].Rule.ID] {
			p.send(ctx, vs[i:i+1], at[i:i+1])
		}
	}
}

// decode decodes and validates an event; a refused one comes with its
// dead-letter reason and an error naming the line, column and field.
func (p *partition) decode(data []byte) (*schema.Event, string, error) {
	if len(data) > p.w.opts.MaxEventBytes {
		return nil, schema.ReasonTooLarge, fmt.Errorf("event of %d bytes: the limit is %d", len(data), p.w.opts.MaxEventBytes)
	}
	ev, err := schema.DecodeEvent("event", data)
	if err != nil {
		return nil, schema.DeadLetterReason(err), err
	}
	return &ev, "", nil
}

// sameRun refuses an event whose runId is not the run of the subject it
// was published on (its last token): the stream partitions by the subject,
// so judging it would put a run's events in a partition whose worker does
// not answer the run's decisions.
func sameRun(subject string, ev *schema.Event) error {
	tok := subject[strings.LastIndexByte(subject, '.')+1:]
	run, err := schema.ParseRunToken(tok)
	if err != nil {
		return fmt.Errorf("subject %q: %w", subject, err)
	}
	if run != ev.RunID {
		return fmt.Errorf("runId %q, seq %d: published on the subject of run %q (%s): an event goes on its own run's subject", ev.RunID, ev.Seq, run, subject)
	}
	return nil
}

// apply feeds an in-order event, decoded from raw, to its run and
// publishes the verdicts. The run keeps a compact copy of raw rather than
// the decoded event as its last one (monitor.Run.AddEncoded).
func (p *partition) apply(ctx context.Context, runID string, rs *runState, ev *schema.Event, raw []byte, replay bool) {
	vs, err := rs.run.AddEncoded(ev, bytes.Clone(raw))
	if ev.Seq > 0 && ev.Seq <= maxSums {
		for uint64(len(rs.sums)) < ev.Seq {
			rs.sums = append(rs.sums, 0)
		}
		rs.sums[ev.Seq-1] = sum(raw)
	}
	rs.next = ev.Seq + 1
	if ev.Start != nil {
		rs.agent, rs.project = ev.Start.Agent, schema.StartProject(ev.Start)
	}
	rs.pastSkips()
	if err != nil {
		if !replay {
			raw, _ := json.Marshal(ev)
			p.dead(ctx, schema.ReasonAfterEnd, fmt.Errorf("runId %q, seq %d: %w", runID, ev.Seq, err), raw)
		}
		return
	}
	switch {
	case !replay:
		p.send(ctx, vs, rs.run.VerdictTimes())
	case p.fresh != nil:
		p.sendFresh(ctx, vs, rs.run.VerdictTimes())
	}
	if rs.run.Ended() {
		p.end(runID, fmt.Sprintf("%s at seq %d", ev.Type, ev.Seq))
	}
}

// drain applies the buffered events that are next in line.
func (p *partition) drain(ctx context.Context, runID string, rs *runState, replay bool) {
	for p.runs[runID] == rs {
		b, ok := rs.buffer[rs.next]
		if !ok {
			break
		}
		delete(rs.buffer, rs.next)
		p.apply(ctx, runID, rs, b.ev, b.raw, replay)
	}
	if p.runs[runID] != rs { // the run ended: what still waits comes after its end
		for seq, b := range rs.buffer {
			if !replay {
				p.dead(ctx, schema.ReasonAfterEnd, fmt.Errorf("runId %q, seq %d: the run has ended", runID, seq), b.raw)
			}
			delete(rs.buffer, seq)
		}
	}
	rs.dropBefore(rs.next, runID, p)
}

// sweep gives up on gaps that did not close in time and, every tenth of
// IdleAfter, ends the runs idle for that long (so a run ends between
// IdleAfter and 1.1 × IdleAfter after its last event, and a partition with
// many open runs does not scan them all at every tick).
func (p *partition) sweep(ctx context.Context) {
	if p.marks != nil {
		return // still restoring
	}
	now := time.Now()
	for id, rs := range p.gapped {
		if now.Sub(rs.gapSince) >= p.w.opts.GapTimeout {
			p.skipGap(ctx, id, rs)
		}
	}
	if now.Sub(p.idleScan) < p.w.opts.IdleAfter/10 {
		return
	}
	p.idleScan = now
	for id, rs := range p.runs {
		if len(rs.buffer) == 0 && now.Sub(rs.last) >= p.w.opts.IdleAfter {
			vs := rs.run.End()
			p.send(ctx, vs, rs.run.VerdictTimes())
			p.end(id, fmt.Sprintf("idle for %s after seq %d, without run.finish", p.w.opts.IdleAfter, rs.next-1))
			p.dirty = true
		}
	}
}

// maxEnded bounds the ended runs a partition remembers, to refuse events
// that arrive after their run ended; the oldest are forgotten first.
const maxEnded = 10_000

// end removes an ended run and remembers that it ended, and how.
func (p *partition) end(runID, how string) {
	delete(p.runs, runID)
	delete(p.gapped, runID)
	p.ended[runID] = how
	p.endedOrder = append(p.endedOrder, runID)
	for len(p.endedOrder) > maxEnded {
		delete(p.ended, p.endedOrder[0])
		p.endedOrder = p.endedOrder[1:]
	}
}

// StreamIntegrity is the built-in rule a gap violates: a run whose events
// did not arrive gap-free within the gap timeout.
const StreamIntegrity = "ponens.stream_integrity"

func (p *partition) skipGap(ctx context.Context, id string, rs *runState) {
	if rs.dropBefore(rs.next, id, p) {
		return // nothing left to wait for
	}
	keys := make([]uint64, 0, len(rs.buffer))
	for s := range rs.buffer {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	missing := rs.next
	first := rs.buffer[keys[0]]
	gapErr := fmt.Errorf("runId %q: seq %d to %d never arrived within %s; continuing at seq %d", id, missing, keys[0]-1, p.w.opts.GapTimeout, keys[0])
	p.dead(ctx, schema.ReasonSeqGap, gapErr, first.raw)
	v := schema.VerdictEvent{RunID: id, Seq: keys[0], Rule: schema.RuleRef{ID: StreamIntegrity, Description: "events of a run arrive gap-free"},
		Status: schema.StatusViolated, Mode: schema.ModeObserve, Cause: &schema.Cause{Event: *first.ev, Subformula: "gap-free"}}
	p.send(ctx, []schema.VerdictEvent{v}, []time.Time{first.ev.TS})
	rs.skipped = append(rs.skipped, [2]uint64{missing, keys[0] - 1})
	rs.next = keys[0]
	p.dirty = true
	p.drain(ctx, id, rs, false)
}

func (p *partition) dead(ctx context.Context, reason string, err error, data []byte) {
	if derr := p.w.opts.DeadLetter(ctx, reason, err, data); derr != nil {
		p.fail(fmt.Errorf("dead letter (%s: %v): %w", reason, err, derr))
	}
}

// send publishes verdicts to the verdicts stream, each with its message id
// so that a replay after a crash stores nothing twice, and with the time of
// the event it is on, at[i] (schema.HeaderEventTime; none when zero).
func (p *partition) send(ctx context.Context, vs []schema.VerdictEvent, at []time.Time) {
	for i := range vs {
		v := &vs[i]
		data, err := json.Marshal(v)
		if err != nil {
			p.fail(err)
			return
		}
		msg := nats.NewMsg(p.w.opts.Subjects.Verdict(p.k, v.RunID))
		msg.Data = data
		msg.Header.Set(jetstream.MsgIDHeader, schema.VerdictMsgID(v))
		if id, ok := p.fileIDs[v.Rule.ID]; ok {
			msg.Header.Set(schema.HeaderRule, id)
		}
		agent := ""
		if rs := p.runs[v.RunID]; rs != nil {
			agent = rs.agent
			setHeader(msg, schema.HeaderAgent, rs.agent)
			setHeader(msg, schema.HeaderProject, rs.project)
		}
		setHeader(msg, schema.HeaderSeverity, p.severity[v.Rule.ID])
		if i < len(at) && !at[i].IsZero() {
			msg.Header.Set(schema.HeaderEventTime, schema.FormatEventTime(at[i]))
		}
		f, err := p.w.js.PublishMsgAsync(msg)
		if err != nil {
			p.fail(err)
			return
		}
		p.pub = append(p.pub, f)
		if v.Status == schema.StatusViolated && p.w.opts.Violated != nil {
			p.w.opts.Violated(v, agent)
		}
	}
}

// setHeader sets the header key of msg to value when value is not empty.
func setHeader(msg *nats.Msg, key, value string) {
	if value != "" {
		msg.Header.Set(key, value)
	}
}

// checkpoint waits until every verdict sent is stored, stores the
// checkpoint, then acks everything up to it: an event is acked only after
// the verdicts it caused are stored.
func (p *partition) checkpoint(ctx context.Context) error {
	p.ckptAt = time.Now()
	for _, f := range p.pub {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("storing a verdict: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.pub = p.pub[:0]
	if p.lastMsg == nil && !p.dirty || p.marks != nil {
		return nil
	}
	data, err := p.encodeCheckpoint(p.ckBuf[:0])
	if err != nil {
		return err
	}
	p.ckBuf = data
	if _, err := p.w.checkpoints.Put(ctx, leaseKey(p.k), data); err != nil {
		return err
	}
	p.dirty = false
	if p.lastMsg == nil {
		return nil
	}
	if err := p.lastMsg.Ack(); err != nil {
		return err
	}
	p.lastMsg = nil
	return nil
}

// encodeCheckpoint appends the partition's checkpoint, as JSON, to buf.
// It writes the open runs straight from the partition, in no particular
// order, instead of building a map for encoding/json to sort: a partition
// with thousands of open runs writes its checkpoint several times a second.
func (p *partition) encodeCheckpoint(buf []byte) ([]byte, error) {
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendUint(buf, p.lastSeq, 10)
	buf = append(buf, `,"runs":{`...)
	sep := false
	var err error
	for id, rs := range p.runs {
		if sep {
			buf = append(buf, ',')
		}
		sep = true
		if buf, err = segjson.Append(buf, id, 0); err != nil {
			return nil, err
		}
		buf = append(buf, `:{"first":`...)
		buf = strconv.AppendUint(buf, rs.first, 10)
		buf = append(buf, `,"next":`...)
		buf = strconv.AppendUint(buf, rs.next, 10)
		if len(rs.skipped) > 0 {
			buf = append(buf, `,"skipped":[`...)
			for i, r := range rs.skipped {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, '[')
				buf = strconv.AppendUint(buf, r[0], 10)
				buf = append(buf, ',')
				buf = strconv.AppendUint(buf, r[1], 10)
				buf = append(buf, ']')
			}
			buf = append(buf, ']')
		}
		if len(rs.dropped) > 0 {
			buf = append(buf, `,"dropped":[`...)
			for i, d := range rs.dropped {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendUint(buf, d, 10)
			}
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
	}
	buf = append(buf, `},"ended":`...)
	if buf, err = segjson.Append(buf, p.endedOrder, 0); err != nil {
		return nil, err
	}
	if len(p.ended) > 0 {
		buf = append(buf, `,"endedHow":`...)
		if buf, err = segjson.Append(buf, p.ended, 0); err != nil {
			return nil, err
		}
	}
	buf = append(buf, `,"rules":`...)
	if buf, err = segjson.Append(buf, p.ruleIDs(), 0); err != nil {
		return nil, err
	}
	return append(buf, '}'), nil
}

// ruleIDs lists the verdict ids of the partition's rules.
func (p *partition) ruleIDs() []string {
	rules := p.eng.Rules()
	ids := make([]string, len(rules))
	for i, r := range rules {
		ids[i] = r.ID
	}
	return ids
}

// serveDecide answers decision requests for runs of this partition.
func (p *partition) serveDecide(m *nats.Msg) {
	var req struct {
		RunID  string         `json:"runId"`
		Action *schema.Action `json:"action"`
		NewRun bool           `json:"newRun"`
	}
	reply := func(v any) {
		data, _ := json.Marshal(v)
		_ = m.Respond(data)
	}
	if err := json.Unmarshal(m.Data, &req); err != nil || req.RunID == "" || req.Action == nil {
		reply(map[string]string{"error": fmt.Sprintf("expected {\"runId\": …, \"action\": {…}}: %v", err)})
		return
	}
	if k := p.w.opts.Subjects.PartitionOf(req.RunID); k != p.k {
		// Asked of the wrong partition (a client with another partition
		// count): this one knows nothing of the run, and an answer from an
		// empty run could allow what the run's own history forbids.
		reply(map[string]string{"error": fmt.Sprintf("runId %q belongs to partition %d of %d, not %d: the client's partition count differs from the stream's", req.RunID, k, p.w.opts.Subjects.Partitions, p.k)})
		return
	}
	r := decideReq{runID: req.RunID, action: req.Action, newRun: req.NewRun, reply: make(chan any, 1)}
	select {
	case p.decide <- r:
		reply(<-r.reply)
	case <-p.done:
		reply(retryLater{"partition moved; retry", true})
	case <-time.After(5 * time.Second):
		reply(retryLater{"partition busy; retry", true})
	}
}

// answer judges the step from the run's state. A run that has ended is
// refused (no step can follow it), and so is a run the partition does not
// know, unless the request asks to judge it as a new run: an empty history
// must not allow what the run's own history would forbid.
func (p *partition) answer(req decideReq) any {
	if rs := p.runs[req.runID]; rs != nil {
		return rs.run.Decide(req.action)
	}
	if how, ended := p.ended[req.runID]; ended {
		msg := fmt.Sprintf("run %q: the run has ended (%s): no step can follow", req.runID, how)
		if how == "" {
			msg = fmt.Sprintf("run %q: the run has ended: no step can follow", req.runID)
		}
		return refusal{msg, remote.DecideRunEnded}
	}
	if !req.newRun {
		return refusal{fmt.Sprintf("run %q is unknown: no event of it has been processed (ask as a new run to judge it from an empty history)", req.runID), remote.DecideRunUnknown}
	}
	return p.eng.NewRun(req.runID).Decide(req.action)
}
