package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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

// TestSinkProcessKilled: a real `ponens sink` process is killed with
// SIGKILL as soon as it has committed a batch (before or while it acks
// it), twice; a third process finishes the streams. The store then holds
// every event and verdict once: none lost, none counted twice.
func TestSinkProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs sink processes")
	}
	bin := ponensBinary(t)
	srv, _, js := jstest.Start(t)
	ctx := context.Background()
	sub := schema.Subjects{Prefix: schema.DefaultPrefix, Partitions: schema.DefaultPartitions}
	if err := transport.Provision(ctx, js, transport.StreamConfig{Partitions: sub.Partitions, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	events := fleet.Interleave(fleet.Generate(fleet.Config{Agents: 4, RunsPerAgent: 5, Steps: 12, Violations: 0.4, Seed: 5}), 5)
	pub := transport.NewPublisher(js, sub, transport.PublisherOptions{})
	violated := 0
	for i, ev := range events {
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
		v := schema.VerdictEvent{RunID: ev.RunID, Seq: ev.Seq, Rule: schema.RuleRef{ID: "r"}, Status: schema.StatusPending, Mode: schema.ModeObserve}
		if i%7 == 0 {
			v.Status = schema.StatusViolated
			violated++
		}
		data, _ := json.Marshal(v)
		m := nats.NewMsg(sub.Verdict(sub.PartitionOf(ev.RunID), ev.RunID))
		m.Data = data
		m.Header.Set(nats.MsgIdHdr, schema.VerdictMsgID(&v))
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	store := filepath.Join(work, "store")
	conf := filepath.Join(work, "ponens.yaml")
	if err := os.WriteFile(conf, []byte("log:\n  level: debug\nstore:\n  batch_rows: 40\n  flush_every: 20ms\n  ack_wait: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(hold string, args ...string) (*exec.Cmd, *bufio.Scanner) {
		cmd := exec.Command(bin, append([]string{"sink", "--config", conf, "--url", srv.ClientURL(), "--store", store}, args...)...)
		cmd.Env = append(os.Environ(), holdAckEnv+"="+hold)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, bufio.NewScanner(stderr)
	}
	// Each sink is held after its first commit, before the ack, and
	// killed there: the batch is stored and will come again.
	for range 2 {
		cmd, sc := start("1m")
		held := false
		for !held && sc.Scan() {
			held = strings.Contains(sc.Text(), "holding the ack")
		}
		if !held {
			t.Fatal("ponens sink ended without committing a batch")
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	left := pending(t, js, sub)
	r := runBinary(t, work, nil, "sql", "--store", store, "--format", "csv", "SELECT (SELECT count() FROM events FINAL) + (SELECT count() FROM verdicts FINAL)")
	var stored int
	if _, err := fmt.Sscan(lastLine(r.stdout), &stored); err != nil || r.code != 0 {
		t.Fatalf("counting the stored rows: %v\n%s%s", err, r.stdout, r.stderr)
	}
	if acked := 2*len(events) - int(left); stored <= acked || left == 0 {
		t.Fatalf("%d rows stored, %d of %d messages acknowledged: no batch was killed between its commit and its ack", stored, acked, 2*len(events))
	}
	metricsAddr := freeAddr(t)
	cmd, sc := start("", "--metrics", metricsAddr)
	go func() {
		for sc.Scan() {
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for pending(t, js, sub) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages still not acknowledged", pending(t, js, sub))
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkSinkMetrics(t, metricsAddr, uint64(left))
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ponens sink after SIGINT: %v", err)
	}
	r = runBinary(t, work, nil, "sql", "--store", store, "--format", "csv",
		"SELECT (SELECT count() FROM events FINAL), (SELECT count() FROM verdicts FINAL), (SELECT countIf(status = 'violated') FROM verdicts FINAL), (SELECT uniqExact(run_id) FROM runs)")
	if want := fmt.Sprintf("%d,%d,%d,20", len(events), len(events), violated); !strings.HasSuffix(strings.TrimSpace(r.stdout), "\n"+want) {
		t.Fatalf("stored counts %q, want %q (events, verdicts, violated, runs)\n%s", r.stdout, want, r.stderr)
	}
}

// pending is the messages of VERDICTS and EVENTS the store's consumers
// have not acknowledged yet (all of them before a consumer exists).
func pending(t *testing.T, js natsjs.JetStream, sub schema.Subjects) uint64 {
	t.Helper()
	var n uint64
	for _, s := range []struct{ stream, kind string }{{schema.StreamVerdicts, "verdicts"}, {schema.StreamEvents, "events"}} {
		c, err := js.Consumer(context.Background(), s.stream, sub.Prefix+"-store-"+s.kind)
		if err != nil {
			return 1
		}
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += info.NumPending + uint64(info.NumAckPending)
	}
	return n
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// checkSinkMetrics reads the metrics of the sink at addr, which stored the
// last rows messages of the streams: its rows, per stream, add up to them,
// nothing was skipped, and both consumers have caught up.
func checkSinkMetrics(t *testing.T, addr string, rows uint64) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	value := func(name, stream string) uint64 {
		m := regexp.MustCompile(`(?m)^` + name + `\{stream="` + stream + `"\} (\d+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("no %s{stream=%q} in the metrics:\n%s", name, stream, body)
		}
		n, _ := strconv.ParseUint(string(m[1]), 10, 64)
		return n
	}
	got := value("ponens_store_rows_total", "verdicts") + value("ponens_store_rows_total", "events")
	if got != rows {
		t.Errorf("ponens_store_rows_total: %d in all, want the %d messages left to it", got, rows)
	}
	for _, s := range []string{"verdicts", "events"} {
		if n := value("ponens_store_skipped_total", s); n != 0 {
			t.Errorf("ponens_store_skipped_total{stream=%q} = %d, want 0", s, n)
		}
		if n := value("ponens_store_lag_messages", s); n != 0 {
			t.Errorf("ponens_store_lag_messages{stream=%q} = %d, want 0", s, n)
		}
		if b, c := value("ponens_store_batches_total", s), value("ponens_store_batch_rows_count", s); b == 0 || b != c {
			t.Errorf("stream %s: %d batches, %d batch sizes observed", s, b, c)
		}
	}
}
