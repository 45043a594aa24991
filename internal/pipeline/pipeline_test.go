package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

var subjects = schema.Subjects{Prefix: "ponens", Partitions: 2}

// natsOptions joins the server at url: the provisioning connection makes
// the streams, the parts connect plainly (the test server has no users).
func natsOptions(url string) pipeline.NATSOptions {
	return pipeline.NATSOptions{
		URL: url,
		Open: func(ctx context.Context, url string, _ transport.Role) (*nats.Conn, jetstream.JetStream, error) {
			nc, err := nats.Connect(url)
			if err != nil {
				return nil, nil, err
			}
			js, err := jetstream.New(nc)
			if err == nil {
				err = transport.Provision(ctx, js, transport.StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions, Duplicates: time.Minute})
			}
			if err != nil {
				nc.Close()
				return nil, nil, err
			}
			return nc, js, nil
		},
		Dial: func(url string, _ transport.Role) (*nats.Conn, error) { return nats.Connect(url) },
	}
}

// TestPipelineStoresAndAlerts wires the gateway, two workers, the alert
// stage and the sink into the embedded store through New, posts the
// example fleet to the gateway, and finds every event stored, as many
// verdict rows as the VERDICTS stream holds, and one alert per stored
// violation.
func TestPipelineStoresAndAlerts(t *testing.T) {
	srv, nc, js := jstest.Start(t)
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	e, err := chdb.Open(chdb.Options{Path: t.TempDir()})
	if err != nil {
		t.Fatalf("the embedded store (make deps installs it): %v", err)
	}
	defer e.Close()
	if _, err := chdb.Migrate(e); err != nil {
		t.Fatal(err)
	}
	var alerts atomic.Int64
	sub, err := nc.Subscribe(subjects.Prefix+".alerts.>", func(*nats.Msg) { alerts.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	stats := new(sink.Stats)
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pipeline.New(ctx, pipeline.Options{
		NATS:     natsOptions(srv.ClientURL()),
		Subjects: subjects,
		Gateway:  &pipeline.GatewayOptions{Listen: "127.0.0.1:0"},
		Workers: &pipeline.WorkersOptions{IDs: []string{"w1", "w2"}, Worker: worker.Options{Rules: set,
			LeaseTTL: time.Second, CheckpointEvery: 50 * time.Millisecond}},
		Alerts: &pipeline.AlertOptions{},
		Sink: &pipeline.SinkOptions{Store: chdb.NewStore(e), Where: "test", Records: chdb.Querier{E: e},
			Sink: sink.Options{BatchRows: 100, FlushEvery: 50 * time.Millisecond, Stats: stats, Metrics: sink.NewMetrics(reg)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	body, err := os.ReadFile("../../examples/traces/fleet.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+p.Gateway().String()+"/v1/events", "application/x-ndjson", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway: %s", resp.Status)
	}
	events := bytes.Count(bytes.TrimSpace(body), []byte("\n")) + 1
	count := func(sql string) int {
		out, err := e.Query([]byte(sql), "TSV")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return n
	}
	deadline := time.Now().Add(60 * time.Second)
	var stored, verdicts, inStream, violated int
	for {
		info, err := js.Stream(ctx, schema.StreamVerdicts)
		if err != nil {
			t.Fatal(err)
		}
		inStream = int(info.CachedInfo().State.Msgs)
		stored = count("SELECT count() FROM events FINAL")
		verdicts = count("SELECT count() FROM verdicts FINAL")
		violated = count("SELECT count() FROM verdicts FINAL WHERE status = 'violated'")
		if stored == events && inStream > 0 && verdicts == inStream && int(alerts.Load()) == violated && violated > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d of %d events stored, %d verdict rows for %d in the stream, %d alerts for %d violations",
				stored, events, verdicts, inStream, alerts.Load(), violated)
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkVerdictTimes(t, e)
	checkTableRows(t, e, reg)
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run after its context ended: %v", err)
	}
}

// checkVerdictTimes: on a store the sink wrote, each verdict's ts is the
// ts of the event it is on (the example fleet's events are dated before the
// test runs, so the time the stream stored a verdict would differ), and the
// README's question "time from the first violation of a rule to the end of
// its run" has no negative answer.
func checkVerdictTimes(t *testing.T, e *chdb.Engine) {
	t.Helper()
	query := func(sql string) string {
		out, err := e.Query([]byte(sql), "TSV")
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return strings.TrimSpace(string(out))
	}
	got := query(`SELECT count(), countIf(v.ts != ev.ts), anyIf((v.ts, ev.ts), v.ts != ev.ts) FROM verdicts AS v FINAL
		JOIN (SELECT run_id, seq, ts FROM events FINAL) AS ev USING (run_id, seq)`)
	if f := strings.Split(got, "\t"); len(f) != 3 || f[0] == "0" || f[1] != "0" {
		t.Fatalf("verdicts on an event, those whose ts is not their event's, one (verdict ts, event ts): %q, want some and none", got)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	q := regexp.MustCompile(`(?s)5\. Time from the first violation.*?\$ ponens sql "([^\n]*)"\n`).FindSubmatch(readme)
	if q == nil {
		t.Fatal("README.md: no question 5 (time from the first violation to the end of its run) with its ponens sql line")
	}
	rows := query(string(q[1]))
	if rows == "" {
		t.Fatalf("README question 5 answered nothing on the sink's store: %s", q[1])
	}
	for _, line := range strings.Split(rows, "\n") {
		f := strings.Split(line, "\t")
		if n, err := strconv.Atoi(f[len(f)-1]); err != nil || n < 0 {
			t.Errorf("README question 5 on the sink's store: %q: seconds to the end should be a number ≥ 0", line)
		}
	}
}

// checkTableRows: ponens_store_table_rows_total counts, per table, at
// least the rows the table holds (a batch delivered again counts again),
// and counts every version of a rule's history, not its message.
func checkTableRows(t *testing.T, e *chdb.Engine, reg *prometheus.Registry) {
	t.Helper()
	for _, table := range []string{"events", "verdicts", "rule_versions"} {
		rows := 0
		var counted float64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			out, err := e.Query([]byte("SELECT count() FROM "+table+" FINAL"), "TSV")
			if err != nil {
				t.Fatal(err)
			}
			rows, _ = strconv.Atoi(strings.TrimSpace(string(out)))
			if counted = tableRows(t, reg, table); rows > 0 && counted >= float64(rows) {
				break
			}
		}
		if rows == 0 || counted < float64(rows) {
			t.Errorf("ponens_store_table_rows_total{table=%q} = %v, want at least the %d rows it holds (and some)", table, counted, rows)
		}
	}
}

// tableRows is ponens_store_table_rows_total{table} gathered from reg.
func tableRows(t *testing.T, reg *prometheus.Registry, table string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetName() == "ponens_store_table_rows_total" && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == table {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no ponens_store_table_rows_total{table=%q} among the metrics", table)
	return 0
}

// TestPipelineStopsOnPartError: a part that fails stops the others and
// its error is Run's; a part that ends early without an error does not.
func TestPipelineStopsOnPartError(t *testing.T) {
	srv, _, _ := jstest.Start(t)
	boom := errors.New("boom")
	var stopped atomic.Bool
	p, err := pipeline.New(context.Background(), pipeline.Options{
		NATS:     natsOptions(srv.ClientURL()),
		Subjects: subjects,
		Extra: []pipeline.Actor{
			{Name: "done early", Run: func(context.Context) error { return nil }},
			{Name: "waits", Run: func(ctx context.Context) error { <-ctx.Done(); stopped.Store(true); return nil }},
			{Name: "fails", Run: func(context.Context) error { time.Sleep(100 * time.Millisecond); return boom }},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want the failing part's error", err)
	}
	if !stopped.Load() {
		t.Fatal("the waiting part was not stopped")
	}
}

// TestPipelineAddressTaken: a gateway address in use is a ConfigError
// naming gateway.listen, from New, before anything runs.
func TestPipelineAddressTaken(t *testing.T) {
	srv, _, _ := jstest.Start(t)
	held, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, err = pipeline.New(context.Background(), pipeline.Options{NATS: natsOptions(srv.ClientURL()), Subjects: subjects,
		Gateway: &pipeline.GatewayOptions{Listen: held.Addr().String()}})
	var ce *pipeline.ConfigError
	if !errors.As(err, &ce) || ce.Key != "gateway.listen" {
		t.Fatalf("New: %v, want a ConfigError on gateway.listen", err)
	}
}
