package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// startPart starts `ponens args...` and stops it with SIGINT when the
// test ends, failing the test if it then exits other than 0.
func startPart(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(ponensBinary(t), args...)
	cmd.Env = os.Environ()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("ponens %s after SIGINT: %v\n%s", args[0], err, out.String())
		}
	})
	return &out
}

// violatedVerdicts counts the violated verdicts of the VERDICTS stream,
// and all of them.
func violatedVerdicts(t *testing.T, js natsjs.JetStream) (violated, all int) {
	t.Helper()
	ctx := context.Background()
	c, err := js.OrderedConsumer(ctx, schema.StreamVerdicts, natsjs.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		mb, err := c.FetchNoWait(500)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range mb.Messages() {
			n++
			all++
			var v schema.VerdictEvent
			if err := json.Unmarshal(m.Data(), &v); err != nil {
				t.Fatalf("verdict: %v", err)
			}
			if v.Status == schema.StatusViolated {
				violated++
			}
		}
		if n == 0 {
			return violated, all
		}
	}
}

// TestSeparateAlertStage: `ponens worker` and `ponens alert`, each its own
// process against one NATS server, give one alert for each violated
// verdict the worker published, and stop cleanly on SIGINT.
func TestSeparateAlertStage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs worker and alert processes")
	}
	srv, nc, js := jstest.Start(t)
	ctx := context.Background()
	sub := schema.Subjects{Prefix: schema.DefaultPrefix, Partitions: schema.DefaultPartitions}
	if err := transport.Provision(ctx, js, transport.StreamConfig{Partitions: sub.Partitions, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	var alerts atomic.Int64
	s, err := nc.Subscribe(sub.Prefix+".alerts.>", func(*nats.Msg) { alerts.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unsubscribe()
	startPart(t, "worker", "--url", srv.ClientURL(), "--rules", "../../examples/rules", "--name", "w1")
	alertLog := startPart(t, "alert", "--url", srv.ClientURL())
	runs := fleet.Generate(fleet.Config{Agents: 3, RunsPerAgent: 4, Steps: 8, Violations: 0.5, Seed: 5})
	pub := transport.NewPublisher(js, sub, transport.PublisherOptions{})
	defer pub.Close()
	for _, ev := range fleet.Interleave(runs, 2) {
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Settled: the same counts twice, a second apart.
	deadline := time.Now().Add(60 * time.Second)
	last := [3]int{-1}
	for {
		n, all := violatedVerdicts(t, js)
		now := [3]int{n, all, int(alerts.Load())}
		if n > 0 && now == last && now[2] == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d alerts for %d violated verdicts of %d\nalert: %s", now[2], n, all, alertLog.String())
		}
		last = now
		time.Sleep(time.Second)
	}
}

// TestQueryCommand: `ponens query` alone serves the store `ponens check
// --store` wrote: ready, every checked run listed, a taken address exit 2.
func TestQueryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens query")
	}
	work := t.TempDir()
	store := filepath.Join(work, "store")
	if r := runBinary(t, "../..", nil, "check", "--rules", "examples/rules", "--store", store, "--out", filepath.Join(work, "out"), "examples/traces"); r.code > 1 {
		t.Fatalf("check --store: exit %d\n%s", r.code, r.stderr)
	}
	addr := freeAddr(t)
	log := startPart(t, "query", "--rules", "../../examples/rules", "--store", store, "--listen", addr)
	get := func(path string) (int, []byte) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := get("/readyz"); code != http.StatusOK; code, _ = get("/readyz") {
		if time.Now().After(deadline) {
			t.Fatalf("ponens query not ready after 30 s:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, body := get("/v1/runs?limit=100")
	var runs struct {
		Data struct {
			Runs []struct {
				RunID string `json:"runId"`
			} `json:"runs"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &runs); code != http.StatusOK || err != nil {
		t.Fatalf("/v1/runs: %d %v %s", code, err, body)
	}
	ids := map[string]bool{}
	for _, r := range runs.Data.Runs {
		ids[r.RunID] = true
	}
	if len(ids) != 5 || !ids["fleet-run-2"] { // two reference traces and fleet.jsonl's three runs
		t.Fatalf("/v1/runs lists %v, want the five checked runs", ids)
	}
	other := filepath.Join(work, "other")
	makeStore(t, other)
	r := runBinary(t, "../..", nil, "query", "--rules", "examples/rules", "--store", other, "--listen", addr)
	if r.code != exitBadInput || !strings.Contains(r.stderr, "query.listen") {
		t.Fatalf("query on a taken address: exit %d, want 2 naming query.listen\n%s", r.code, r.stderr)
	}
}
