package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestStreamFull: at nats.events.max_msgs the EVENTS stream refuses new
// events: the gateway answers 503 naming the full stream, the events
// stored before stay (none evicted), and /v1/streams shows the alarm.
func TestStreamFull(t *testing.T) {
	_, _, js := jstest.Start(t)
	cfg := streams
	cfg.Events = transport.Limits{MaxMsgs: 10}
	if err := transport.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	metrics := gateway.NewMetrics()
	f := serve(t, js, gateway.Options{Metrics: metrics, Streams: func(ctx context.Context) (any, error) { return transport.Usage(ctx, js, 0.8) }})
	var first, second []string
	for i := range 10 {
		first = append(first, ev(fmt.Sprintf("full-%d", i), 1, "run.start", ""))
	}
	for i := range 5 {
		second = append(second, ev(fmt.Sprintf("late-%d", i), 1, "run.start", ""))
	}
	if status, res, _ := f.post(t, "application/x-ndjson", strings.NewReader(strings.Join(first, "\n"))); status != http.StatusOK || res.Accepted != 10 {
		t.Fatalf("filling: %d %+v", status, res)
	}
	status, res, _ := f.post(t, "application/x-ndjson", strings.NewReader(strings.Join(second, "\n")))
	if status != http.StatusServiceUnavailable || res.Accepted != 0 || !strings.Contains(res.Error, transport.ErrStreamFull.Error()) {
		t.Errorf("over the limit: %d %+v, want 503 naming the full stream", status, res)
	}
	got := f.events(t)
	want := make([]string, 0, 10)
	for i := range 10 {
		want = append(want, schema.EventMsgID(fmt.Sprintf("full-%d", i), 1))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("stored %v, want the first ten events kept", got)
	}

	resp, err := http.Get(f.url + "/v1/streams")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var body struct {
		Streams []transport.StreamUsage `json:"streams"`
	}
	if err := json.Unmarshal(data, &body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/streams: %d %s %v", resp.StatusCode, data, err)
	}
	if len(body.Streams) != 3 || body.Streams[0].Stream != schema.StreamEvents || !body.Streams[0].Alarm ||
		body.Streams[0].Used != 1 || body.Streams[0].Discard != "new" || body.Streams[1].Alarm {
		t.Errorf("/v1/streams: %s", data)
	}

	// The same reading as metrics: the alarm, the fill, and the events by
	// what became of them.
	metrics.ObserveStreams(body.Streams)
	text := get(t, f.url+"/metrics")
	for _, want := range []string{
		`ponens_stream_limit_alarm{stream="EVENTS"} 1`, `ponens_stream_limit_alarm{stream="VERDICTS"} 0`,
		`ponens_stream_used_ratio{stream="EVENTS"} 1`, `ponens_stream_messages{stream="EVENTS"} 10`,
		`ponens_gateway_events_total{status="stored"} 10`, `ponens_gateway_events_total{status="failed"} 5`,
		`ponens_gateway_events_total{status="duplicate"} 0`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
}

// get returns the body of a GET of url, which must answer 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, data)
	}
	return string(data)
}

// TestConflictingDuplicate: an event with the run and seq of a stored one
// but other content is not "accepted": it is rejected as
// conflicting-duplicate on its line and dead-lettered, while the same
// event sent again is accepted (stored once).
func TestConflictingDuplicate(t *testing.T) {
	f := setup(t, gateway.Options{})
	other := ev("run-a", 2, "action", `,"action":{"id":1,"type":"GitCommit"}`)
	if status, res, _ := f.post(t, "application/x-ndjson", strings.NewReader(start+"\n"+action)); status != http.StatusOK || res.Accepted != 2 {
		t.Fatalf("first: %d %+v", status, res)
	}
	status, res, _ := f.post(t, "application/x-ndjson", strings.NewReader(start+"\n"+other))
	if status != http.StatusMultiStatus || res.Accepted != 1 || res.Duplicates != 1 || res.Rejected != 1 || res.Conflicts != 1 || len(res.Errors) != 1 ||
		len(res.Events) != 2 || res.Events[0].Status != "duplicate" || res.Events[1].Status != "conflict" ||
		res.Errors[0].Reason != schema.ReasonConflictingDuplicate || res.Errors[0].Line != 2 || res.Errors[0].Index != 1 {
		t.Fatalf("conflict: %d %s", status, js(res))
	}
	if got := f.events(t); len(got) != 2 {
		t.Errorf("stored %v, want the two first events only", got)
	}
	dl := f.deadLetters(t)
	if len(dl) != 1 || dl[0].Reason != schema.ReasonConflictingDuplicate || dl[0].Body != other ||
		!strings.Contains(dl[0].Error, "conflicting duplicate: expected the content stored for this run and seq") {
		t.Errorf("dead letters %s", js(dl))
	}
}
