package api

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/jstest"
)

// GET /v1/subscriptions/{id}/stream streams the alerts the alert stage
// sends to a stream subscription, as "alert" events; a subscription that
// sends elsewhere is refused (400), an unknown one is 404.
func TestSubscriptionStream(t *testing.T) {
	_, nc, js := jstest.Start(t)
	sub := schema.Subjects{Prefix: "fleet", Partitions: 2}
	kv, err := alert.OpenStore(context.Background(), js, sub)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []alert.Subscription{{ID: "live", Stream: true}, {ID: "hook", Webhook: "https://hooks.example.com/x"}} {
		if err := alert.PutSubscription(ctx, kv, s); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(Options{Store: chdbQ(), Alerts: alert.Store{KV: kv}, Live: NATSLive{Conn: nc, Subjects: sub}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for path, want := range map[string]int{"/v1/subscriptions/hook/stream": 400, "/v1/subscriptions/nosuch/stream": 404} {
		if code, body := get(t, ts.URL+path); code != want {
			t.Errorf("GET %s: %d, want %d\n%s", path, code, want, body)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, ts.URL+"/v1/subscriptions/live/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, ct)
	}
	rd := bufio.NewReader(resp.Body)
	if l, _ := rd.ReadString('\n'); !strings.HasPrefix(l, ": ponens alerts") { // the stream is open: the subscription is made
		t.Fatalf("first line %q", l)
	}
	n := alert.NewNotifier(nc, kv)
	n.Subjects = sub
	// The opening line is written once the stream's subscription exists,
	// so one test alert sent now must arrive.
	if st, err := n.Test(rctx, "live"); err != nil || st.Error != "" {
		t.Fatalf("test alert: %+v, %v", st, err)
	}
	var event, data string
	for data == "" {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		switch {
		case strings.HasPrefix(l, "event: "):
			event = strings.TrimSpace(strings.TrimPrefix(l, "event: "))
		case strings.HasPrefix(l, "data: "):
			data = strings.TrimPrefix(l, "data: ")
		}
	}
	if event != "alert" || !strings.Contains(data, `"rule":"ponens.test"`) {
		t.Errorf("event %q, data %s", event, data)
	}
}
