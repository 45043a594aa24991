package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/monitor/remote"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

const testPartitions = 8

// quiet drops the workers' logs: the tests assert on what they do.
var quiet = slog.New(slog.DiscardHandler)

var subjects = schema.Subjects{Prefix: "ponens", Partitions: testPartitions}

// startJS starts an in-process JetStream server on a loopback port with the
// streams of the pipeline.
func startJS(t *testing.T) (*nats.Conn, natsjs.JetStream) {
	t.Helper()
	_, nc, js := jstest.Start(t)
	cfg := transport.StreamConfig{Prefix: subjects.Prefix, Partitions: testPartitions, Duplicates: 10 * time.Minute}
	if err := transport.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// deadLetters sends a worker's dead letters to the DEADLETTER stream, as
// ponens serve does.
func deadLetters(js natsjs.JetStream) func(context.Context, string, error, []byte) error {
	dl := transport.NewDeadLetters(js, subjects)
	return func(ctx context.Context, reason string, err error, payload []byte) error {
		return dl.Send(ctx, reason, schema.SourceWorker, err, payload)
	}
}

// sameVerdicts fails t unless the verdicts stored (got, n in all) are want,
// run by run in order: none lost, none duplicated.
func sameVerdicts(t *testing.T, got map[string][]string, n int, want map[string][]string) {
	t.Helper()
	if n != total(want) {
		t.Errorf("stored %d verdicts, want %d (lost or duplicated)", n, total(want))
	}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("run %s: verdicts differ\n got %v\nwant %v", id, got[id], w)
		}
	}
}

func rules(t *testing.T) *ruleset.Set {
	t.Helper()
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	set.Enforce = true
	return set
}

func publish(t *testing.T, js natsjs.JetStream, ev *schema.Event, msgID string) {
	t.Helper()
	data, _ := json.Marshal(ev)
	msg := nats.NewMsg(subjects.Event(ev.RunID))
	msg.Data = data
	msg.Header.Set(natsjs.MsgIDHeader, msgID)
	if _, err := js.PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
}

// fleet makes n random runs; runs are interleaved, some events of some runs
// are swapped with their successor and some are published twice.
func fleet(n int) (runs [][]schema.Event, order []*schema.Event, dups []*schema.Event) {
	r := rand.New(rand.NewPCG(42, 1))
	for i := range n {
		runs = append(runs, gen.Run(r, fmt.Sprintf("run/%d", i), gen.RunConfig{MaxActions: 10}))
	}
	cursor := make([]int, n)
	for {
		live := []int{}
		for i := range runs {
			if cursor[i] < len(runs[i]) {
				live = append(live, i)
			}
		}
		if len(live) == 0 {
			break
		}
		i := live[r.IntN(len(live))]
		evs := runs[i]
		c := cursor[i]
		if c+1 < len(evs) && r.IntN(8) == 0 { // out of order
			order = append(order, &evs[c+1], &evs[c])
			cursor[i] += 2
			continue
		}
		order = append(order, &evs[c])
		if r.IntN(10) == 0 {
			dups = append(dups, &evs[c])
		}
		cursor[i]++
	}
	return runs, order, dups
}

// expected is each run's verdict stream from a local monitor: what the
// fleet must store.
func expected(t *testing.T, set *ruleset.Set, runs [][]schema.Event) map[string][]string {
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	out := map[string][]string{}
	for _, evs := range runs {
		if len(evs) == 0 {
			continue
		}
		run := eng.NewRun(evs[0].RunID)
		for i := range evs {
			vs, err := run.Add(&evs[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				out[v.RunID] = append(out[v.RunID], line(v))
			}
		}
		if !run.Ended() {
			for _, v := range run.End() {
				out[v.RunID] = append(out[v.RunID], line(v))
			}
		}
	}
	return out
}

func line(v schema.VerdictEvent) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stored reads the verdicts stream, per run in stream order.
func stored(t *testing.T, js natsjs.JetStream) (map[string][]string, int) {
	t.Helper()
	out, n, err := readVerdicts(js)
	if err != nil {
		t.Fatal(err)
	}
	return out, n
}

func readVerdicts(js natsjs.JetStream) (map[string][]string, int, error) {
	ctx := context.Background()
	c, err := js.OrderedConsumer(ctx, schema.StreamVerdicts, natsjs.OrderedConsumerConfig{})
	if err != nil {
		return nil, 0, err
	}
	info, err := js.Stream(ctx, schema.StreamVerdicts)
	if err != nil {
		return nil, 0, err
	}
	total := int(info.CachedInfo().State.Msgs)
	out := map[string][]string{}
	for i := 0; i < total; i++ {
		m, err := c.Next(natsjs.FetchMaxWait(5 * time.Second))
		if err != nil {
			return nil, 0, err
		}
		var v schema.VerdictEvent
		if err := json.Unmarshal(m.Data(), &v); err != nil {
			return nil, 0, err
		}
		out[v.RunID] = append(out[v.RunID], line(v))
	}
	return out, total, nil
}

// runEvent is event seq of run, of type typ, with action a (a run.start
// gets an empty body).
func runEvent(run string, seq uint64, typ schema.EventType, a *schema.Action) *schema.Event {
	e := &schema.Event{V: 1, RunID: run, Seq: seq, TS: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Type: typ, Action: a}
	if typ == schema.TypeRunStart {
		e.Start = &schema.RunStart{}
	}
	return e
}

// storedDeadLetters lists the dead letters stored, in order, each as
// "<reason>: <error>"; nil when they cannot be read now.
func storedDeadLetters(js natsjs.JetStream) []string {
	ctx := context.Background()
	info, err := js.Stream(ctx, schema.StreamDeadLetter)
	if err != nil {
		return nil
	}
	c, err := js.OrderedConsumer(ctx, schema.StreamDeadLetter, natsjs.OrderedConsumerConfig{})
	if err != nil {
		return nil
	}
	out := []string{}
	for range info.CachedInfo().State.Msgs {
		m, err := c.Next(natsjs.FetchMaxWait(time.Second))
		if err != nil {
			return nil
		}
		out = append(out, m.Headers().Get(schema.HeaderReason)+": "+m.Headers().Get(schema.HeaderError))
	}
	return out
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func verdictCount(js natsjs.JetStream) int {
	info, err := js.Stream(context.Background(), schema.StreamVerdicts)
	if err != nil {
		return -1
	}
	return int(info.CachedInfo().State.Msgs)
}

// startWorker starts a worker with the tests' settings, adjusted by adjust
// before it runs.
func startWorker(t *testing.T, nc *nats.Conn, js natsjs.JetStream, id string, set *ruleset.Set, adjust func(*Worker)) (*Worker, context.CancelFunc, chan struct{}) {
	t.Helper()
	w, err := New(nc, js, Options{ID: id, Subjects: subjects, Rules: set, LeaseTTL: time.Second, Logger: quiet,
		CheckpointEvery: 50 * time.Millisecond, IdleAfter: 2 * time.Second, GapTimeout: 300 * time.Millisecond, MaxEventBytes: 8 << 10,
		DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	adjust(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	return w, cancel, done
}

func total(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// TestEndToEnd: events of many runs, interleaved, partly out of order and
// partly duplicated, published across the partitions, give exactly the
// verdict streams a local `ponens check` gives.
func TestEndToEnd(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	runs, order, dups := fleet(40)
	want := expected(t, set, runs)
	for _, ev := range order {
		publish(t, js, ev, schema.EventMsgID(ev.RunID, ev.Seq))
	}
	for _, ev := range dups { // same event, another message id: the worker drops it
		publish(t, js, ev, "again:"+schema.EventMsgID(ev.RunID, ev.Seq))
	}
	_, cancel, done := startWorker(t, nc, js, "w1", set, func(*Worker) {})
	waitFor(t, 20*time.Second, "all verdicts", func() bool { return verdictCount(js) >= total(want) })
	time.Sleep(600 * time.Millisecond) // anything extra would show up now
	cancel()
	<-done
	got, n := stored(t, js)
	sameVerdicts(t, got, n, want)
}

// TestCrashAndTakeover: a worker dies mid-stream without a last checkpoint
// (its connection is cut); another takes its partitions after the lease
// expires, restores the open runs from the checkpoint, and the verdicts
// stream ends up exactly as after an uninterrupted run.
func TestCrashAndTakeover(t *testing.T) {
	crashAndTakeover(t, 40, func(*Worker) {})
}

// TestTakeoverWithImpatientFetches: the same, with a new owner whose
// fetches give up almost at once, so that some come back empty while the
// events before the checkpoint are still being replayed. Replay must not
// end before they are all in.
func TestTakeoverWithImpatientFetches(t *testing.T) {
	crashAndTakeover(t, 60, func(w *Worker) {
		w.opts.FetchBatch = 1
		w.fetchWait = 300 * time.Microsecond
	})
}

// crashAndTakeover publishes half of a fleet of runs to worker a, cuts
// its connection, publishes the rest and lets worker b, adjusted by
// adjust before it starts, take over; the verdicts must be exactly those of
// a local monitor.
func crashAndTakeover(t *testing.T, runs int, adjust func(*Worker)) {
	nc, js := startJS(t)
	set := rules(t)
	fleetRuns, order, _ := fleet(runs)
	want := expected(t, set, fleetRuns)
	half := len(order) / 2
	for _, ev := range order[:half] {
		publish(t, js, ev, schema.EventMsgID(ev.RunID, ev.Seq))
	}
	ncA, jsA := jstest.Connect(t, nc.ConnectedUrl())
	// Idleness is not what this tests: a, killed mid-stream, never ends a
	// run as idle, and b only once a run has been silent for longer than
	// its catching up can take under the race detector; then the runs
	// that never close end as idle, as the expected verdicts have it.
	_, cancelA, doneA := startWorker(t, ncA, jsA, "a", set, func(w *Worker) { w.opts.IdleAfter = time.Minute })
	waitFor(t, 10*time.Second, "worker a to process half", func() bool { return verdictCount(js) > 0 })
	time.Sleep(300 * time.Millisecond) // some checkpoints, some verdicts after them
	ncA.Close()                        // crash: nothing more is acked, checkpointed or released
	cancelA()
	<-doneA
	for _, ev := range order[half:] {
		publish(t, js, ev, schema.EventMsgID(ev.RunID, ev.Seq))
	}
	ncB, jsB := jstest.Connect(t, nc.ConnectedUrl())
	_, cancelB, doneB := startWorker(t, ncB, jsB, "b", set, func(w *Worker) { w.opts.IdleAfter = 3 * time.Second; adjust(w) })
	waitFor(t, 60*time.Second, "all verdicts", func() bool { return verdictCount(js) >= total(want) })
	time.Sleep(600 * time.Millisecond)
	cancelB()
	<-doneB
	got, n := stored(t, js)
	sameVerdicts(t, got, n, want)
}

// TestRebalance: a second and a third worker take their share of the
// partitions; when they stop, the first owns everything again.
func TestRebalance(t *testing.T) {
	nc, _ := startJS(t)
	set := rules(t)
	var ws []*Worker
	var cancels []context.CancelFunc
	var dones []chan struct{}
	for i := range 3 {
		c, j := jstest.Connect(t, nc.ConnectedUrl())
		w, cancel, done := startWorker(t, c, j, fmt.Sprintf("w%d", i), set, func(*Worker) {})
		ws, cancels, dones = append(ws, w), append(cancels, cancel), append(dones, done)
		n := i + 1
		waitFor(t, 15*time.Second, fmt.Sprintf("%d workers to share the partitions", n), func() bool {
			var all []int
			for _, w := range ws {
				owned := w.Owned()
				if len(owned) == 0 {
					return false
				}
				all = append(all, owned...)
			}
			slices.Sort(all)
			return len(all) == testPartitions && len(slices.Compact(all)) == testPartitions
		})
	}
	for i := 2; i >= 1; i-- {
		cancels[i]()
		<-dones[i]
	}
	waitFor(t, 15*time.Second, "the first worker to own every partition", func() bool { return len(ws[0].Owned()) == testPartitions })
	cancels[0]()
	<-dones[0]
}

// TestBadInputAndGaps: malformed events, unknown types, oversize events and
// events after the end go to the dead-letter stream with their reason; a gap that does not
// close becomes a dead letter and a stream-integrity verdict, and the run
// goes on.
func TestBadInputAndGaps(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ctx := context.Background()
	raw := func(runID, body string) {
		msg := nats.NewMsg(subjects.Event(runID))
		msg.Data = []byte(body)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	ev := runEvent
	raw("bad", `{"v":1,"runId":"bad"`)
	raw("bad", `{"v":1,"runId":"bad","seq":1,"ts":"2026-01-01T00:00:00Z","type":"party"}`)
	raw("big", `{"v":1,"runId":"big","seq":1,"ts":"2026-01-01T00:00:00Z","type":"telemetry","telemetry":"`+strings.Repeat("x", 9<<10)+`"}`)
	publish(t, js, ev("g", 1, schema.TypeRunStart, nil), "g1")
	publish(t, js, ev("g", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "GitCommit"}), "g2")
	publish(t, js, ev("g", 5, schema.TypeAction, &schema.Action{ID: 4, Type: "RunTests", Status: "completed"}), "g5")
	publish(t, js, ev("g", 6, schema.TypeRunFinish, nil), "g6")
	publish(t, js, ev("g", 7, schema.TypeAction, &schema.Action{ID: 5, Type: "EditFile"}), "g7")
	_, cancel, done := startWorker(t, nc, js, "w", set, func(*Worker) {})
	defer func() { cancel(); <-done }()

	reasons := func() []string {
		if got := storedDeadLetters(js); len(got) >= 5 {
			return got
		}
		return nil
	}
	var got []string
	waitFor(t, 10*time.Second, "five dead letters", func() bool {
		got = reasons()
		return got != nil
	})
	joined := strings.Join(got, "\n")
	for _, want := range []string{"malformed: event:1:21: ", "unknown-type: event:1:", "type", "too-large: event of 9", `seq-gap: runId "g": seq 3 to 4 never arrived`, `after-end: runId "g", seq 7: the run has ended`} {
		if !strings.Contains(joined, want) {
			t.Errorf("dead letters lack %q:\n%s", want, joined)
		}
	}
	all, _ := stored(t, js)
	var integrity bool
	for _, l := range all["g"] {
		integrity = integrity || strings.Contains(l, StreamIntegrity)
	}
	if !integrity {
		t.Errorf("no %s verdict for run g: %v", StreamIntegrity, all["g"])
	}
}

// TestDecideOverNATS: the owner of a run's partition answers decision
// requests with the run's state.
func TestDecideOverNATS(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	publish(t, js, &schema.Event{V: 1, RunID: "d", Seq: 1, TS: ts, Type: schema.TypeRunStart, Start: &schema.RunStart{}}, "d1")
	publish(t, js, &schema.Event{V: 1, RunID: "d", Seq: 2, TS: ts, Type: schema.TypeAction, Action: &schema.Action{ID: 1, Type: "RunTests", Status: "completed"}}, "d2")
	w, cancel, done := startWorker(t, nc, js, "w", set, func(*Worker) {})
	waitFor(t, 10*time.Second, "the partition to be owned", func() bool { return len(w.Owned()) == testPartitions })
	ask := func(run string, a schema.Action, opts ...remote.DecideOption) monitor.Decision {
		var d monitor.Decision
		waitFor(t, 10*time.Second, "an answer", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var err error
			d, err = remote.Decide(ctx, nc, subjects, run, &a, opts...)
			return err == nil
		})
		return d
	}
	waitFor(t, 10*time.Second, "the run's tests to be seen", func() bool {
		return ask("d", schema.Action{ID: 2, Type: "GitCommit"}).Decision == "allow"
	})
	if d := ask("fresh", schema.Action{ID: 1, Type: "GitCommit"}, remote.NewRun()); d.Decision != "deny" || *d.Rule != "tests_before_commit" {
		t.Errorf("commit on a fresh run: %+v", d)
	}
	if d := ask("d", schema.Action{ID: 2, Type: "ToolCall", Capability: "file.write", Payload: json.RawMessage(`{"path":".env"}`)}); d.Decision != "deny" || *d.Source != "policy.md" {
		t.Errorf(".env write: %+v", d)
	}
	// Without NewRun, a run the worker does not know is refused, not judged
	// from an empty history.
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if d, err := remote.Decide(ctx, nc, subjects, "fresh", &schema.Action{ID: 1, Type: "ReadFile"}); !errors.Is(err, remote.ErrRunUnknown) ||
		!strings.Contains(err.Error(), `run "fresh" is unknown`) {
		t.Errorf("unknown run: %+v, %v; want ErrRunUnknown", d, err)
	}
	// A run that has ended is refused, saying how it ended.
	publish(t, js, &schema.Event{V: 1, RunID: "d", Seq: 3, TS: ts, Type: schema.TypeRunFinish, End: &schema.RunEnd{}}, "d3")
	var err error
	waitFor(t, 10*time.Second, "the run's end to be seen", func() bool {
		_, err = remote.Decide(ctx, nc, subjects, "d", &schema.Action{ID: 2, Type: "ReadFile"}, remote.NewRun())
		return errors.Is(err, remote.ErrRunEnded)
	})
	want := `run "d": the run has ended (run.finish at seq 3): no step can follow`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("ended run: %v; want %q", err, want)
	}
	// A worker that takes the partition over from its checkpoint still says
	// how the run ended.
	cancel()
	<-done
	w2, cancel2b, done2 := startWorker(t, nc, js, "w2", set, func(*Worker) {})
	defer func() { cancel2b(); <-done2 }()
	waitFor(t, 10*time.Second, "the partition to be owned again", func() bool { return len(w2.Owned()) == testPartitions })
	waitFor(t, 10*time.Second, "the restored worker's refusal", func() bool {
		_, err = remote.Decide(ctx, nc, subjects, "d", &schema.Action{ID: 2, Type: "ReadFile"}, remote.NewRun())
		return errors.Is(err, remote.ErrRunEnded)
	})
	if !strings.Contains(err.Error(), want) {
		t.Errorf("ended run after a restore: %v; want %q", err, want)
	}
}

// TestRendezvous: each of several workers gets a fair share, and a worker
// joining takes partitions only for itself (no partition moves between the
// workers that stay).
func TestRendezvous(t *testing.T) {
	const parts = 256
	members := []string{"w0", "w1", "w2"}
	count := map[string]int{}
	before := make([]string, parts)
	for k := range parts {
		before[k] = rendezvous(members, k)
		count[before[k]]++
	}
	for _, m := range members {
		if count[m] < parts/6 {
			t.Errorf("%s owns %d of %d partitions: %v", m, count[m], parts, count)
		}
	}
	joined := append(members, "w3")
	for k := range parts {
		if now := rendezvous(joined, k); now != before[k] && now != "w3" {
			t.Errorf("partition %d moved from %s to %s when w3 joined", k, before[k], now)
		}
	}
}

// TestLateEventAfterSkippedGap: an event that arrives after its run gave up
// waiting for it was never applied: it is a dead letter, not dropped as a
// duplicate.
func TestLateEventAfterSkippedGap(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ev := func(seq uint64, typ schema.EventType, a *schema.Action) *schema.Event {
		return runEvent("h", seq, typ, a)
	}
	publish(t, js, ev(1, schema.TypeRunStart, nil), "h1")
	publish(t, js, ev(3, schema.TypeAction, &schema.Action{ID: 2, Type: "ReadFile"}), "h3")
	_, cancel, done := startWorker(t, nc, js, "w", set, func(w *Worker) { w.opts.IdleAfter = time.Minute })
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "the gap given up on", func() bool { return len(storedDeadLetters(js)) == 1 })
	publish(t, js, ev(2, schema.TypeAction, &schema.Action{ID: 1, Type: "EditFile"}), "h2")
	publish(t, js, ev(3, schema.TypeAction, &schema.Action{ID: 2, Type: "ReadFile"}), "h3-again") // a true duplicate: dropped
	var got []string
	waitFor(t, 10*time.Second, "the late event's dead letter", func() bool { got = storedDeadLetters(js); return len(got) >= 2 })
	time.Sleep(300 * time.Millisecond)
	if got = storedDeadLetters(js); len(got) != 2 || !strings.Contains(got[1], `seq-gap: runId "h", seq 2: arrived after the run stopped waiting for seq 2 to 2`) {
		t.Errorf("dead letters %q", got)
	}
}

// TestPartitionCountMismatch: a worker told another partition count than
// the stream's refuses to run (it would leave partitions unconsumed), and a
// decision asked of the wrong partition, by a client with another count, is
// refused instead of being answered from an empty run.
func TestPartitionCountMismatch(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	other := schema.Subjects{Prefix: subjects.Prefix, Partitions: testPartitions + 3}
	odd, err := New(nc, js, Options{ID: "odd", Subjects: other, Rules: set, Logger: quiet, DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := odd.Run(ctx); !errors.Is(err, transport.ErrPartitionChange) {
		t.Fatalf("worker with %d partitions on a stream of %d: Run = %v, want ErrPartitionChange", other.Partitions, testPartitions, err)
	}

	w, stop, done := startWorker(t, nc, js, "w", set, func(*Worker) {})
	defer func() { stop(); <-done }()
	waitFor(t, 10*time.Second, "the partitions to be owned", func() bool { return len(w.Owned()) == testPartitions })
	run := ""
	for i := 0; run == "" && i < 10000; i++ {
		id := fmt.Sprintf("run-%d", i)
		if k := other.PartitionOf(id); k < testPartitions && k != subjects.PartitionOf(id) {
			run = id
		}
	}
	if run == "" {
		t.Fatal("no runId lands on different partitions under the two counts")
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer dcancel()
	d, err := remote.Decide(dctx, nc, other, run, &schema.Action{ID: 1, Type: "GitCommit"})
	if err == nil || !strings.Contains(err.Error(), "the client's partition count differs from the stream's") {
		t.Errorf("decision asked of the wrong partition: %+v, %v", d, err)
	}
	beyond := ""
	for i := 0; beyond == "" && i < 10000; i++ {
		if id := fmt.Sprintf("run-%d", i); other.PartitionOf(id) >= testPartitions {
			beyond = id
		}
	}
	bctx, bcancel := context.WithTimeout(context.Background(), time.Second)
	defer bcancel()
	d, err = remote.Decide(bctx, nc, other, beyond, &schema.Action{ID: 1, Type: "GitCommit"})
	want := fmt.Sprintf("no worker owns partition %d yet, or the stream has fewer than the client's %d partitions", other.PartitionOf(beyond), other.Partitions)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("decision asked of a partition the stream does not have: %+v, %v; want %q", d, err, want)
	}
}
