package alert

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
)

// BenchmarkWebhookLatency measures publish → webhook received for
// violations published one after another to a running alert stage with one
// webhook subscription, and reports p50 and p99.
func BenchmarkWebhookLatency(b *testing.B) {
	nc, js := startVerdicts(b)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv, err := OpenStore(ctx, js, subjects)
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- time.Now() }))
	defer srv.Close()
	if err := PutSubscription(ctx, kv, Subscription{ID: "hook", Webhook: srv.URL, Secret: "k"}); err != nil {
		b.Fatal(err)
	}
	d := New(nc, js, subjects, "alerts")
	d.Notifier = NewNotifier(nc, kv)
	go func() { _ = d.Run(ctx) }()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		v := schema.VerdictEvent{RunID: "r", Seq: uint64(i + 1), Rule: schema.RuleRef{ID: "tests_before_commit"}, Status: schema.StatusViolated, Mode: schema.ModeDeny}
		data, _ := json.Marshal(v)
		start := time.Now()
		if _, err := js.Publish(ctx, subjects.Verdict(0, "r"), data); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
