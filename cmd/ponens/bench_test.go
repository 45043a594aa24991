package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchEmbedded runs a short load against the embedded pipeline, from
// a directory outside the repository and without --rules (the built-in
// example rules), and checks the shape of --json and that every figure was
// measured. It asserts no figure of speed: those are measured by running
// the bench (docs/LOAD.md), never by tests.
func TestBenchEmbedded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded pipeline and loads it for a few seconds")
	}
	t.Chdir(t.TempDir())
	out, stderr, code := runPonens(t, "bench",
		"--duration", "2s", "--runs", "200", "--rate", "2000", "--violations", "0.01", "--json", "--webhook")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	for _, k := range []string{"events", "seconds", "events_per_sec", "verdict_latency_ms", "alert_latency_ms", "open_runs", "rss_bytes"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("--json output has no %q: %s", k, out)
		}
	}
	var res struct {
		Events       int64   `json:"events"`
		Seconds      float64 `json:"seconds"`
		EventsPerSec float64 `json:"events_per_sec"`
		Verdict      struct {
			P50, P99 float64
			Samples  int
		} `json:"verdict_latency_ms"`
		Alert struct {
			P50, P99 float64
			Samples  int
		} `json:"alert_latency_ms"`
		Webhook struct {
			P50, P99 float64
			Samples  int
		} `json:"webhook_latency_ms"`
		OpenRuns       int    `json:"open_runs"`
		RSS            int64  `json:"rss_bytes"`
		Store          string `json:"store"`
		StoredEvents   int64  `json:"stored_events"`
		StoredVerdicts int64  `json:"stored_verdicts"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// 200 starts and about 4,000 actions.
	if res.Events < 1000 || res.Seconds <= 0 || res.EventsPerSec <= 0 {
		t.Errorf("events %d in %gs (%g/s): want a load measured", res.Events, res.Seconds, res.EventsPerSec)
	}
	for name, l := range map[string]struct {
		P50, P99 float64
		Samples  int
	}{"verdict": res.Verdict, "alert": res.Alert, "webhook": res.Webhook} {
		if l.Samples == 0 || l.P50 <= 0 || l.P99 < l.P50 {
			t.Errorf("%s latency %+v: want samples, 0 < p50 <= p99", name, l)
		}
	}
	if res.Webhook.Samples != res.Alert.Samples {
		t.Errorf("%d webhook deliveries timed for %d alerts: want one per violation", res.Webhook.Samples, res.Alert.Samples)
	}
	if res.OpenRuns != 200 {
		t.Errorf("open_runs %d, want 200", res.OpenRuns)
	}
	if res.RSS <= 0 {
		t.Errorf("rss_bytes %d: the embedded pipeline's memory was not measured", res.RSS)
	}
	// With the store, what the sink had stored by the measuring point: at
	// most the events processed, and some verdicts.
	if strings.HasPrefix(res.Store, "sink into") && (res.StoredEvents <= 0 || res.StoredEvents > res.Events || res.StoredVerdicts <= 0) {
		t.Errorf("store %q: %d events and %d verdicts stored of %d events", res.Store, res.StoredEvents, res.StoredVerdicts, res.Events)
	}
}

// TestBenchFlags: usage errors are bad input, before anything starts.
func TestBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--url", "nats://127.0.0.1:1", "--rules", "x"}, "--rules is for the embedded pipeline", exitBadInput},
		{[]string{"--url", "nats://127.0.0.1:1", "--workers", "3"}, "--workers is for the embedded pipeline", exitBadInput},
		{[]string{"--partitions", "0"}, "at least 1", exitBadInput},
		{[]string{"--url", "nats://127.0.0.1:1"}, "ponens bench: connect to nats://127.0.0.1:1", exitUnavailable},
	} {
		_, stderr, code := runPonens(t, append([]string{"bench"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
