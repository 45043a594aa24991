package sink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// engine is the one embedded engine of the test process.
var engine *chdb.Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ponens-sink-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	engine, err = chdb.Open(chdb.Options{Path: dir})
	if err == nil {
		_, err = chdb.Migrate(engine)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink tests:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	engine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func query(t *testing.T, q string) string {
	t.Helper()
	out, err := engine.Query([]byte(q), "TSV")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

var subjects = schema.Subjects{Prefix: "ponens", Partitions: 2}

// startStreams starts an embedded JetStream server with the pipeline's
// streams.
func startStreams(t *testing.T) natsjs.JetStream {
	t.Helper()
	_, _, js := jstest.Start(t)
	if err := transport.Provision(context.Background(), js, transport.StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	return js
}

// publishRuns publishes runs runs of run (prefix-i): a run.start, steps
// actions and a run.finish on EVENTS, and a verdict of two rules per
// action on VERDICTS. It returns the counts of events and verdicts.
func publishRuns(t *testing.T, js natsjs.JetStream, prefix string, runs, steps int) (events, verdicts int) {
	t.Helper()
	ctx := context.Background()
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pub := func(subject, id string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(subject)
		m.Data = data
		m.Header.Set(nats.MsgIdHdr, id)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for r := range runs {
		run := fmt.Sprintf("%s-%d", prefix, r)
		ev := func(seq uint64, body string) {
			var e map[string]any
			if err := json.Unmarshal(fmt.Appendf(nil, `{"v":1,"runId":%q,"seq":%d,"ts":%q,%s}`, run, seq, ts.Add(time.Duration(seq)*time.Second).Format(time.RFC3339), body), &e); err != nil {
				t.Fatal(err)
			}
			pub(subjects.Event(run), schema.EventMsgID(run, seq), e)
			events++
		}
		ev(1, `"type":"run.start","start":{"trigger":{"type":"UserRequest"},"agent":"bot"}`)
		for s := range steps {
			seq := uint64(s + 2)
			ev(seq, fmt.Sprintf(`"type":"action","action":{"id":%d,"type":"ReadFile","category":"activity","evidence":[{"type":"FileRef","ref":"a.go"}],"status":"completed"}`, s+1))
			for _, rule := range []string{"r1", "r2"} {
				st := schema.StatusPending
				if rule == "r2" && s == steps-1 {
					st = schema.StatusViolated
				}
				v := schema.VerdictEvent{RunID: run, Seq: seq, Rule: schema.RuleRef{ID: rule}, Status: st, Mode: schema.ModeObserve}
				pub(subjects.Verdict(subjects.PartitionOf(run), run), run+":"+rule+":"+fmt.Sprint(seq), v)
				verdicts++
			}
		}
		ev(uint64(steps+2), `"type":"run.finish","end":{"outcome":{"type":"ProcessCompleted"}}`)
	}
	return events, verdicts
}

// consume runs a sink into st until it stored rows messages.
func consume(t *testing.T, js natsjs.JetStream, st sink.Appendable, batch, rows int) *sink.Stats {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(sink.Stats)
	done := make(chan error, 1)
	go func() {
		done <- sink.FromStreams(ctx, js, subjects, st, sink.Options{BatchRows: batch, FlushEvery: 50 * time.Millisecond, RetryAfter: 10 * time.Millisecond, Stats: stats, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for stats.Rows.Load() < uint64(rows) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := stats.Rows.Load(); got != uint64(rows) {
		t.Fatalf("stored %d rows, want %d (skipped %d)", got, rows, stats.Skipped.Load())
	}
	return stats
}

func counts(t *testing.T, prefix string) string {
	t.Helper()
	return query(t, fmt.Sprintf(`SELECT
		(SELECT count() FROM events FINAL WHERE run_id LIKE '%[1]s-%%'),
		(SELECT count() FROM verdicts FINAL WHERE run_id LIKE '%[1]s-%%'),
		(SELECT countIf(status = 'violated') FROM run_rule_status FINAL WHERE run_id LIKE '%[1]s-%%'),
		(SELECT count() FROM (SELECT run_id FROM runs WHERE run_id LIKE '%[1]s-%%' GROUP BY run_id HAVING max(outcome) = 'run.finish'))`, prefix))
}

// The sink stores every message of both streams once; consumed again from
// the start in batches cut otherwise (a replay), every count stays exact.
func TestSinkReplayExact(t *testing.T) {
	js := startStreams(t)
	events, verdicts := publishRuns(t, js, "sk-replay", 6, 5)
	st := chdb.NewStore(engine)
	consume(t, js, st, 7, events+verdicts)
	want := fmt.Sprintf("%d\t%d\t6\t6", events, verdicts)
	if got := counts(t, "sk-replay"); got != want {
		t.Fatalf("counts: %q, want %q", got, want)
	}
	if got := query(t, "SELECT count() FROM verdicts WHERE run_id LIKE 'sk-replay-%'"); got != fmt.Sprint(verdicts) {
		t.Errorf("verdict rows without FINAL: %s, want %d (nothing was replayed yet)", got, verdicts)
	}
	for _, kind := range []string{"verdicts", "events"} { // the consumers start over
		if err := js.DeleteConsumer(context.Background(), strings.ToUpper(kind), subjects.Prefix+"-store-"+kind); err != nil {
			t.Fatal(err)
		}
	}
	consume(t, js, st, 4, events+verdicts)
	if got := counts(t, "sk-replay"); got != want {
		t.Fatalf("counts after the replay: %q, want %q", got, want)
	}
	if got := query(t, "SELECT sum(v) FROM (SELECT uniqExactMerge(violations) AS v FROM violations_rule_hour WHERE rule_id = 'r2' GROUP BY hour) "); got != "6" {
		t.Errorf("violations_rule_hour after the replay: %s, want 6", got)
	}
}

// failOnce is a store whose first commit fails.
type failOnce struct {
	st     sink.Appendable
	mu     sync.Mutex
	failed bool
	// failedSeqs and stored are the stream positions of the failed batch
	// and of every batch committed.
	failedSeqs, stored []uint64
}

func (f *failOnce) Appender() sink.Appender { return &failApp{Appender: f.st.Appender(), f: f} }

type failApp struct {
	sink.Appender
	f    *failOnce
	seqs []uint64
}

func (a *failApp) AppendVerdict(v *schema.VerdictEvent, m schema.StreamMeta) error {
	a.seqs = append(a.seqs, m.Seq)
	return a.Appender.AppendVerdict(v, m)
}

func (a *failApp) Commit() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if !a.f.failed && len(a.seqs) > 0 {
		a.f.failed, a.f.failedSeqs = true, a.seqs
		return fmt.Errorf("the store is gone (a test)")
	}
	if err := a.Appender.Commit(); err != nil {
		return err
	}
	a.f.stored = append(a.f.stored, a.seqs...)
	return nil
}

// A commit that fails is rolled back and its batch delivered again: the
// failed batch's verdicts are stored by a later commit, and every count is
// exact.
func TestSinkRollbackRedelivers(t *testing.T) {
	js := startStreams(t)
	events, verdicts := publishRuns(t, js, "sk-fail", 3, 4)
	f := &failOnce{st: chdb.NewStore(engine)}
	stats := consume(t, js, f, 5, events+verdicts)
	if stats.Retries.Load() != 1 || len(f.failedSeqs) == 0 {
		t.Fatalf("retries %d, failed batch %v: want one failed commit", stats.Retries.Load(), f.failedSeqs)
	}
	for _, s := range f.failedSeqs {
		if !slices.Contains(f.stored, s) {
			t.Errorf("verdict at stream seq %d, of the failed batch, was not delivered again", s)
		}
	}
	if got, want := counts(t, "sk-fail"), fmt.Sprintf("%d\t%d\t3\t3", events, verdicts); got != want {
		t.Fatalf("counts: %q, want %q", got, want)
	}
}

// outage is a store that refuses every commit while down is set.
type outage struct {
	st   sink.Appendable
	down atomic.Bool
}

func (o *outage) Appender() sink.Appender { return &outageApp{Appender: o.st.Appender(), o: o} }

type outageApp struct {
	sink.Appender
	o *outage
}

func (a *outageApp) Commit() error {
	if a.o.down.Load() {
		return fmt.Errorf("the store is down (a test)")
	}
	return a.Appender.Commit()
}

// The store goes down while events and verdicts keep coming: nothing is
// stored and nothing acknowledged meanwhile (the sink retries the batch it
// holds; the streams keep the rest), and once the store is back every
// message is stored once: the counts are exact.
func TestSinkStoreOutage(t *testing.T) {
	js := startStreams(t)
	o := &outage{st: chdb.NewStore(engine)}
	stats := new(sink.Stats)
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- sink.FromStreams(ctx, js, subjects, o, sink.Options{BatchRows: 20, FlushEvery: 50 * time.Millisecond, RetryAfter: 20 * time.Millisecond,
			Stats: stats, Metrics: sink.NewMetrics(reg), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() { cancel(); <-done }()
	waitRows := func(what string, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); stats.Rows.Load() < uint64(n); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows stored, want %d", what, stats.Rows.Load(), n)
			}
		}
	}
	e1, v1 := publishRuns(t, js, "sk-out", 3, 4)
	waitRows("before the outage", e1+v1)

	o.down.Store(true)
	retries := stats.Retries.Load()
	e2, v2 := publishRuns(t, js, "sk-out2", 4, 5)
	for deadline := time.Now().Add(10 * time.Second); stats.Retries.Load() < retries+3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sink did not retry while the store was down (%d retries)", stats.Retries.Load())
		}
	}
	time.Sleep(300 * time.Millisecond)
	if got := stats.Rows.Load(); got != uint64(e1+v1) {
		t.Fatalf("%d rows counted stored while the store was down, want %d", got, e1+v1)
	}
	// Every event published during the outage waits to be stored: the lag
	// says so, though no batch was committed since.
	if lag := metric(t, reg, "ponens_store_lag_messages", "stream", "events"); lag < float64(e2) {
		t.Errorf("ponens_store_lag_messages{stream=events} = %v during the outage, want at least the %d events published meanwhile", lag, e2)
	}
	o.down.Store(false)
	waitRows("after the outage", e1+v1+e2+v2)
	time.Sleep(200 * time.Millisecond) // a row stored twice would show now
	if got, want := counts(t, "sk-out2"), fmt.Sprintf("%d\t%d\t4\t4", e2, v2); got != want {
		t.Errorf("counts of what came during the outage: %q, want %q", got, want)
	}
	if got, want := counts(t, "sk-out"), fmt.Sprintf("%d\t%d\t3\t3", e1, v1); got != want {
		t.Errorf("counts of what came before: %q, want %q", got, want)
	}
	if got := stats.Rows.Load(); got != uint64(e1+v1+e2+v2) {
		t.Errorf("%d rows stored, want %d", got, e1+v1+e2+v2)
	}
}

// metric is the value of the metric name whose label is value, gathered
// from reg.
func metric(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.Counter != nil {
						return m.Counter.GetValue()
					}
					return m.Gauge.GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q} among the metrics", name, label, value)
	return 0
}
