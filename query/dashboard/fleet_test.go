package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// The embedded engine: one per process, opened by the first test that
// needs it and closed by TestMain.
var (
	engineOnce sync.Once
	engine     *chdb.Engine
	engineErr  error
	engineDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if engine != nil {
		engine.Close()
	}
	if engineDir != "" {
		os.RemoveAll(engineDir)
	}
	os.Exit(code)
}

// openEngine returns the process's engine, migrated; it fails t when the
// engine's library is not installed (make deps installs it).
func openEngine(t *testing.T) *chdb.Engine {
	t.Helper()
	engineOnce.Do(func() {
		engineDir, engineErr = os.MkdirTemp("", "ponens-dashboard-test-")
		if engineErr != nil {
			return
		}
		engine, engineErr = chdb.Open(chdb.Options{Path: engineDir})
		if engineErr == nil {
			_, engineErr = chdb.Migrate(engine)
		}
	})
	if engineErr != nil {
		t.Fatalf("the embedded store: %v", engineErr)
	}
	return engine
}

var subjects = schema.Subjects{Prefix: "ponens", Partitions: 2}

// testFleet is a running pipeline in this process: an embedded NATS
// server with JetStream, two monitor workers with the example rules, the
// alert stage with the stored subscriptions, and the sink into the
// embedded store, all stopped when the test ends.
type testFleet struct {
	nc      *nats.Conn
	js      natsjs.JetStream
	kv      natsjs.KeyValue // the alerts bucket
	store   *chdb.Engine
	rules   *ruleset.Set
	stats   *sink.Stats
	runs    []fleet.Run
	hook    *httptest.Server // the webhook of the "ops" subscription; its first call fails
	hookHit atomic.Int64
	events  int // events published
}

// startFleet starts the pipeline, stores the subscriptions and a silence,
// publishes the fleet's runs spread over the last twenty hours and a bad
// event, and returns once the store has every event and verdict.
func startFleet(t *testing.T) *testFleet {
	t.Helper()
	f := &testFleet{store: openEngine(t), stats: new(sink.Stats)}
	_, f.nc, f.js = jstest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := transport.Provision(ctx, f.js, transport.StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	f.rules = set
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dl := transport.NewDeadLetters(f.js, subjects)
	for i := range 2 {
		w, err := worker.New(f.nc, f.js, worker.Options{ID: fmt.Sprintf("w%d", i), Subjects: subjects, Rules: set, Logger: log,
			LeaseTTL: time.Second, CheckpointEvery: 50 * time.Millisecond, GapTimeout: 300 * time.Millisecond,
			DeadLetter: func(ctx context.Context, reason string, err error, payload []byte) error {
				return dl.Send(ctx, reason, schema.SourceWorker, err, payload)
			}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = w.Run(ctx) })
	}
	f.startAlerts(t, ctx, &wg)
	wg.Go(func() {
		err := sink.FromStreams(ctx, f.js, subjects, chdb.NewStore(f.store), sink.Options{BatchRows: 500, FlushEvery: 50 * time.Millisecond, RetryAfter: 20 * time.Millisecond, Stats: f.stats, Logger: log})
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("sink: %v", err)
		}
	})
	f.runs = fleet.Generate(fleet.Config{Agents: 4, RunsPerAgent: 4, Steps: 5, Violations: 0.5, Seed: 14, RunPrefix: "dash-"})
	now := time.Now().UTC()
	for i := range f.runs { // run i starts (20h·i/n) after twenty hours ago, so the chart has bars
		start := now.Add(-20*time.Hour + time.Duration(i)*20*time.Hour/time.Duration(len(f.runs)))
		f.publish(t, f.runs[i].Events, start)
	}
	bad := nats.NewMsg(subjects.Event("dash-bad-0"))
	bad.Data = []byte(`{"v":1,"runId":"dash-bad-0","seq":1,"type":"action","action":`)
	if _, err := f.js.PublishMsg(ctx, bad); err != nil {
		t.Fatal(err)
	}
	f.waitStored(t)
	return f
}

// startAlerts stores a webhook subscription ("ops", on every rule, its
// first delivery refused) and a NATS one ("audit", on one rule), a
// silence, and runs the alert stage.
func (f *testFleet) startAlerts(t *testing.T, ctx context.Context, wg *sync.WaitGroup) {
	t.Helper()
	f.hook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.hookHit.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.hook.Close)
	kv, err := alert.OpenStore(ctx, f.js, subjects)
	if err != nil {
		t.Fatal(err)
	}
	f.kv = kv
	for _, s := range []alert.Subscription{
		{ID: "ops", Rules: []string{"*"}, Webhook: f.hook.URL + "/hook", Secret: "s3cret"},
		{ID: "audit", Rules: []string{"no_secret_edits"}, Statuses: []schema.VerdictStatus{schema.StatusViolated, schema.StatusUnresolved}, Subject: "ponens.notify.audit"},
	} {
		if err := alert.PutSubscription(ctx, kv, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := alert.PutSilence(ctx, kv, alert.Silence{ID: "quiet-agent", Agent: "agent-009", Ends: time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)}); err != nil {
		t.Fatal(err)
	}
	d := alert.New(f.nc, f.js, subjects, subjects.Prefix+"-alerts")
	d.Notifier = alert.NewNotifier(f.nc, kv)
	d.Notifier.Backoff = 10 * time.Millisecond
	d.Notifier.DashboardURL = "http://dashboard.invalid"
	wg.Go(func() { _ = d.Run(ctx) })
}

// publish publishes the events of a run with their times moved so that
// the first is at start.
func (f *testFleet) publish(t *testing.T, events []schema.Event, start time.Time) {
	t.Helper()
	ctx := context.Background()
	pub := transport.NewPublisher(f.js, subjects, transport.PublisherOptions{})
	defer pub.Close()
	shift := start.Sub(events[0].TS)
	for i := range events {
		ev := events[i]
		ev.TS = ev.TS.Add(shift)
		if err := pub.Publish(ctx, &ev); err != nil {
			t.Fatal(err)
		}
		f.events++
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitStored waits until the sink has stored every message of the events
// and verdicts streams and the verdicts stream has stopped growing (the
// workers are done with what was published).
func (f *testFleet) waitStored(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	count := func(name string) uint64 {
		s, err := f.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().State.Msgs
	}
	var last uint64
	steady := 0
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ev, vd := count(schema.StreamEvents), count(schema.StreamVerdicts)
		if ev < uint64(f.events) || f.stats.Rows.Load()+f.stats.Skipped.Load() < ev+vd {
			steady = 0
			continue
		}
		if vd == last {
			steady++
		} else {
			steady, last = 0, vd
		}
		if steady >= 10 { // a second without a new verdict, all of them stored
			return
		}
	}
	t.Fatalf("the store has %d rows of %d events and %d verdicts", f.stats.Rows.Load(), count(schema.StreamEvents), count(schema.StreamVerdicts))
}
