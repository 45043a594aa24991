package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// parityRuns are the runs of the parity test: a generated fleet with
// violations, and the example traces (the reference traces as the events
// they are read as), each written as an event stream named by its run id.
// Runs without a closing event are left out: a file ends there, and check
// ends its open obligations unresolved, while in the fleet such a run is
// still open and they stay pending.
func parityRuns(t *testing.T, dir string) []string {
	t.Helper()
	var runs []schema.Run
	for _, r := range fleet.Generate(fleet.Config{Agents: 3, RunsPerAgent: 3, Steps: 8, Violations: 0.5, Seed: 13, RunPrefix: "parity-"}) {
		runs = append(runs, schema.Run{ID: r.ID, Events: r.Events})
	}
	for _, name := range []string{"verify_proved.json", "deploy_aborted.json", "fleet.jsonl"} {
		f, err := tracefile.ReadFile(filepath.Join("../../examples/traces", name), tracefile.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f.Release()
		runs = append(runs, f.Runs...)
	}
	var files []string
	for _, r := range runs {
		if !r.Events[len(r.Events)-1].Type.IsTerminal() {
			continue
		}
		var b bytes.Buffer
		for i := range r.Events {
			line, err := schema.EncodeEventLine(&r.Events[i])
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
		}
		p := filepath.Join(dir, r.ID) // no extension: the trace id is the run id
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

// parityPipeline runs the gateway, two workers and the sink into a new
// embedded store on an embedded NATS server, and returns the gateway's
// address, the store, and a wait that returns once every posted event and
// every verdict the workers made is stored.
func parityPipeline(t *testing.T, set *ruleset.Set) (string, *chdb.Engine, func(events int)) {
	t.Helper()
	srv, _, js := jstest.Start(t)
	e, err := chdb.Open(chdb.Options{Path: t.TempDir()})
	if err != nil {
		t.Fatalf("the embedded store (make deps installs it): %v", err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := chdb.Migrate(e); err != nil {
		t.Fatal(err)
	}
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 2}
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(sink.Stats)
	p, err := pipeline.New(ctx, pipeline.Options{
		NATS: pipeline.NATSOptions{URL: srv.ClientURL(),
			Open: func(ctx context.Context, u string, _ transport.Role) (*nats.Conn, jetstream.JetStream, error) {
				nc, err := nats.Connect(u)
				if err != nil {
					return nil, nil, err
				}
				js, _ := jetstream.New(nc)
				return nc, js, transport.Provision(ctx, js, transport.StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions, Duplicates: time.Minute})
			},
			Dial: func(u string, _ transport.Role) (*nats.Conn, error) { return nats.Connect(u) }},
		Subjects: subjects,
		Gateway:  &pipeline.GatewayOptions{Listen: "127.0.0.1:0"},
		Workers: &pipeline.WorkersOptions{IDs: []string{"w1", "w2"}, Worker: worker.Options{Rules: set,
			LeaseTTL: time.Second, CheckpointEvery: 50 * time.Millisecond}},
		Sink: &pipeline.SinkOptions{Store: chdb.NewStore(e), Where: "test", Sink: sink.Options{BatchRows: 200, FlushEvery: 50 * time.Millisecond, Stats: stats}},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("pipeline: %v", err)
		}
		p.Close()
	})
	wait := func(events int) {
		t.Helper()
		var last uint64
		steady := 0
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			info, err := js.Stream(ctx, schema.StreamVerdicts)
			if err != nil {
				t.Fatal(err)
			}
			vd := info.CachedInfo().State.Msgs
			if stats.Rows.Load() < uint64(events)+vd || vd != last {
				steady, last = 0, vd
				continue
			}
			if steady++; steady >= 10 { // a second without a new verdict, all of them stored
				return
			}
		}
		t.Fatalf("after 60 s the store has %d rows of %d events and %d verdicts", stats.Rows.Load(), events, last)
	}
	return p.Gateway().String(), e, wait
}

// TestSummaryParity: `ponens check` on trace files, and the query service
// over the same events posted to the gateway, monitored by the workers and
// stored by the sink, give the same summary.json byte for byte (the
// content hash included), and the same verdict stream of every run.
func TestSummaryParity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pipeline and the embedded store")
	}
	work := t.TempDir()
	traces := filepath.Join(work, "traces")
	if err := os.Mkdir(traces, 0o755); err != nil {
		t.Fatal(err)
	}
	files := parityRuns(t, traces)
	out := filepath.Join(work, "out")
	root := newRootCommand()
	root.SetArgs(append([]string{"check", "--rules", "../../examples/rules", "--out", out, "--verdicts-dir", filepath.Join(out, "verdicts")}, files...))
	root.SetOut(io.Discard)
	var ee *exitError
	if err := root.Execute(); err != nil && !(errors.As(err, &ee) && ee.code == exitViolated) {
		t.Fatalf("ponens check: %v", err)
	}
	want, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := schema.DecodeSummary(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Traces) < 8 || sum.Counts[schema.StatusViolated] == 0 || sum.Counts[schema.StatusSatisfied] == 0 || sum.Matrix.Results == nil {
		t.Fatalf("the check covers too little: %d traces, counts %v, results %v", len(sum.Traces), sum.Counts, sum.Matrix.Results != nil)
	}

	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	gw, e, wait := parityPipeline(t, set)
	events := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		events += bytes.Count(body, []byte("\n"))
		resp, err := http.Post("http://"+gw+"/v1/events", "application/x-ndjson", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway: %s for %s", resp.Status, f)
		}
	}
	wait(events)

	qs, err := queryServer(config.Default(), set, chdb.Querier{E: e}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(qs.Handler())
	defer web.Close()
	sel := url.Values{}
	for _, f := range files {
		sel.Add("run", filepath.Base(f))
	}
	got := httpBody(t, web.URL+"/v1/summary?"+sel.Encode())
	if !bytes.Equal(got, want) {
		t.Errorf("the service's summary differs from ponens check's: %s", firstDiff(got, want))
	}
	for _, f := range files {
		run := filepath.Base(f)
		want, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(schema.RunTraceStream(run))))
		if err != nil {
			t.Fatal(err)
		}
		if got := httpBody(t, web.URL+"/v1/runs/"+url.PathEscape(run)+"/verdicts"); !bytes.Equal(got, want) {
			t.Errorf("run %s: the service's verdict stream differs from ponens check's: %s", run, firstDiff(got, want))
		}
	}
}

// httpBody GETs u and returns its body; anything but 200 fails the test.
func httpBody(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", u, resp.Status, err, b)
	}
	return b
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: got %.300q, want %.300q (%d and %d lines)", i+1, gl, wl, len(g), len(w))
		}
	}
	return "same lines"
}
