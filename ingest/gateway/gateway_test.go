package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

var streams = transport.StreamConfig{Prefix: "ponens", Partitions: 4, Duplicates: time.Minute, Memory: true}

// fixture is a gateway over a real publisher and dead-letter sender on an
// embedded JetStream server.
type fixture struct {
	url string
	js  natsjs.JetStream
}

func setup(t *testing.T, opts gateway.Options) *fixture {
	t.Helper()
	_, _, js := jstest.Start(t)
	if err := transport.Provision(context.Background(), js, streams); err != nil {
		t.Fatal(err)
	}
	return serve(t, js, opts)
}

func serve(t *testing.T, js natsjs.JetStream, opts gateway.Options) *fixture {
	t.Helper()
	pub := transport.NewPublisher(js, streams.Subjects(), transport.PublisherOptions{Retries: -1, Timeout: 2 * time.Second})
	t.Cleanup(func() { pub.Close() })
	srv := httptest.NewServer(gateway.New(opts, pub, transport.NewDeadLetters(js, streams.Subjects())))
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, js: js}
}

// post sends body and decodes the response.
func (f *fixture) post(t *testing.T, contentType string, body io.Reader, header ...string) (int, gateway.Response, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+"/v1/events", body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res gateway.Response
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("response %d %q: %v", resp.StatusCode, data, err)
	}
	return resp.StatusCode, res, resp.Header
}

// deadLetter is a stored dead letter, for comparisons.
type deadLetter struct {
	Subject, Reason, Source, Error, Truncated, Body string
}

func (f *fixture) deadLetters(t *testing.T) []deadLetter {
	t.Helper()
	var out []deadLetter
	for _, m := range jstest.Messages(t, f.js, schema.StreamDeadLetter) {
		h := m.Headers()
		out = append(out, deadLetter{m.Subject(), h.Get(schema.HeaderReason), h.Get(schema.HeaderSource), h.Get(schema.HeaderError), h.Get(schema.HeaderTruncated), string(m.Data())})
	}
	return out
}

func (f *fixture) events(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range jstest.Messages(t, f.js, schema.StreamEvents) {
		out = append(out, m.Headers().Get(natsjs.MsgIDHeader))
	}
	return out
}

func ev(run string, seq int, typ, body string) string {
	return fmt.Sprintf(`{"v":1,"runId":%q,"seq":%d,"ts":"2025-10-02T08:00:00Z","type":%q%s}`, run, seq, typ, body)
}

var (
	start     = ev("run-a", 1, "run.start", "")
	action    = ev("run-a", 2, "action", `,"action":{"id":1,"type":"ReadFile"}`)
	truncated = `{"v":1,"runId":`
	unknown   = ev("run-a", 3, "nope", "")
	invalid   = ev("run-a", 4, "action", `,"action":{"id":2,"type":""}`)
	tooLong   = ev("run-a", 5, "action", `,"action":{"id":3,"type":"Edit","detail":"`+strings.Repeat("x", 400)+`"}`)
)

func TestJSONLines(t *testing.T) {
	f := setup(t, gateway.Options{MaxEventBytes: 300})
	body := strings.Join([]string{start, "", truncated, action, unknown, invalid, tooLong}, "\n") + "\n"
	status, res, _ := f.post(t, "application/x-ndjson", strings.NewReader(body))
	want := gateway.Response{Accepted: 2, Stored: 2, Rejected: 4, Errors: []gateway.Problem{
		{Line: 3, Column: 16, Index: 1, Field: "", Reason: "malformed", Error: "malformed JSON: unexpected end of line"},
		{Line: 5, Column: 67, Index: 3, Field: "type", Reason: "unknown-type", Error: `unknown event type: expected one of run.start, run.finish, run.error, run.cancel, action, artifact, residual, telemetry, got "nope"`},
		{Line: 6, Column: 100, Index: 4, Field: "action.type", Reason: "invalid", Error: "missing field: expected a non-empty string"},
		{Line: 7, Column: 1, Index: 5, Field: "", Reason: "too-large", Error: "too large: expected an event of at most 300 bytes, got 519 bytes"},
	}, Events: []gateway.EventResult{
		{Line: 1, Index: 0, Status: "stored"}, {Line: 3, Index: 1, Status: "rejected"}, {Line: 4, Index: 2, Status: "stored"},
		{Line: 5, Index: 3, Status: "rejected"}, {Line: 6, Index: 4, Status: "rejected"}, {Line: 7, Index: 5, Status: "rejected"},
	}}
	if status != http.StatusMultiStatus || !reflect.DeepEqual(res, want) {
		t.Errorf("status %d, response\n%s\nwant 207,\n%s", status, js(res), js(want))
	}
	if got := f.events(t); !reflect.DeepEqual(got, []string{"run-a:1", "run-a:2"}) {
		t.Errorf("events stored: %v", got)
	}
	wantDLQ := []deadLetter{
		{"ponens.dlq.malformed", "malformed", "gateway", "request:3:16: malformed JSON: unexpected end of line", "", truncated},
		{"ponens.dlq.unknown-type", "unknown-type", "gateway", `request:5:67: type: unknown event type: expected one of run.start, run.finish, run.error, run.cancel, action, artifact, residual, telemetry, got "nope"`, "", unknown},
		{"ponens.dlq.invalid", "invalid", "gateway", "request:6:100: action.type: missing field: expected a non-empty string", "", invalid},
		{"ponens.dlq.too-large", "too-large", "gateway", "request:7:1: too large: expected an event of at most 300 bytes, got 519 bytes", "", tooLong},
	}
	if got := f.deadLetters(t); !reflect.DeepEqual(got, wantDLQ) {
		t.Errorf("dead letters\n%s\nwant\n%s", js(got), js(wantDLQ))
	}

	// The same body again: the events are already stored, still accepted,
	// and said to be duplicates.
	status, res, _ = f.post(t, "application/x-ndjson", strings.NewReader(body))
	if status != http.StatusMultiStatus || res.Accepted != 2 || res.Stored != 0 || res.Duplicates != 2 || res.Events[0].Status != "duplicate" || len(f.events(t)) != 2 {
		t.Errorf("again: %d %+v, %d events stored", status, res, len(f.events(t)))
	}
}

func TestArray(t *testing.T) {
	f := setup(t, gateway.Options{})
	body := "[\n  " + start + ",\n  " + invalid + ",\n  " + action + "\n]\n"
	status, res, _ := f.post(t, "application/json", strings.NewReader(body))
	want := gateway.Response{Accepted: 2, Stored: 2, Rejected: 1, Errors: []gateway.Problem{
		{Line: 3, Column: 102, Index: 1, Field: "action.type", Reason: "invalid", Error: "missing field: expected a non-empty string"},
	}, Events: []gateway.EventResult{{Line: 2, Index: 0, Status: "stored"}, {Line: 3, Index: 1, Status: "rejected"}, {Line: 4, Index: 2, Status: "stored"}}}
	if status != http.StatusMultiStatus || !reflect.DeepEqual(res, want) {
		t.Errorf("status %d, response\n%s\nwant 207,\n%s", status, js(res), js(want))
	}
	if dl := f.deadLetters(t); len(dl) != 1 || dl[0].Body != invalid {
		t.Errorf("dead letters %v", dl)
	}

	// A broken array: the elements before the break count, the rest is one
	// malformed dead letter.
	body = "[" + ev("run-b", 1, "run.start", "") + ",\n" + ev("run-b", 2, "run.finish", "") + " " + start + "]"
	status, res, _ = f.post(t, "application/json", strings.NewReader(body))
	if status != http.StatusMultiStatus || res.Accepted != 2 || res.Rejected != 1 || res.Errors[0].Line != 2 || res.Errors[0].Index != 2 || res.Errors[0].Reason != "malformed" {
		t.Errorf("broken array: %d %s", status, js(res))
	}
	if dl := f.deadLetters(t); len(dl) != 2 || dl[1].Body != start+"]" {
		t.Errorf("dead letters %s", js(dl))
	}

	// Empty array: nothing to do.
	if status, res, _ := f.post(t, "application/json", strings.NewReader(" [ ] ")); status != http.StatusOK || res.Accepted != 0 || res.Rejected != 0 {
		t.Errorf("empty array: %d %+v", status, res)
	}
}

func TestSingleObject(t *testing.T) {
	f := setup(t, gateway.Options{})
	status, res, _ := f.post(t, "application/json", strings.NewReader(start))
	if status != http.StatusOK || !reflect.DeepEqual(res, gateway.Response{Accepted: 1, Stored: 1, Errors: []gateway.Problem{}, Events: []gateway.EventResult{{Line: 1, Status: "stored"}}}) {
		t.Errorf("valid: %d %s", status, js(res))
	}
	// Pretty-printed and invalid: 422, the field located in the body.
	pretty := "{\n  \"v\": 1,\n  \"runId\": \"run-a\",\n  \"seq\": 2,\n  \"ts\": \"2025-10-02T08:00:00Z\",\n  \"type\": \"action\"\n}\n"
	status, res, _ = f.post(t, "", strings.NewReader(pretty))
	want := gateway.Response{Rejected: 1, Errors: []gateway.Problem{
		{Line: 1, Column: 1, Field: "action", Reason: "invalid", Error: `missing field: expected a body for type "action"`},
	}, Events: []gateway.EventResult{{Line: 1, Status: "rejected"}}}
	if status != http.StatusUnprocessableEntity || !reflect.DeepEqual(res, want) {
		t.Errorf("invalid: %d\n%s\nwant\n%s", status, js(res), js(want))
	}
	// Several objects sent as application/json are JSON lines.
	status, res, _ = f.post(t, "application/json", strings.NewReader(action+"\n"+ev("run-a", 3, "run.finish", "")+"\n"))
	if status != http.StatusOK || res.Accepted != 2 {
		t.Errorf("lines as application/json: %d %s", status, js(res))
	}
	if n := len(f.events(t)); n != 3 {
		t.Errorf("%d events stored, want 3", n)
	}
}

func TestNotJSON(t *testing.T) {
	f := setup(t, gateway.Options{})
	status, res, _ := f.post(t, "application/json", strings.NewReader("hello, world"))
	want := gateway.Response{Rejected: 1, Error: "the body is not JSON", Errors: []gateway.Problem{
		{Line: 1, Column: 1, Reason: "malformed", Error: `malformed JSON: expected an event object, an array of them, or JSON lines, got "hello, world"`},
	}}
	if status != http.StatusBadRequest || !reflect.DeepEqual(res, want) {
		t.Errorf("%d\n%s\nwant\n%s", status, js(res), js(want))
	}
	status, _, _ = f.post(t, "application/x-ndjson", strings.NewReader("a\nb\n"))
	if status != http.StatusBadRequest {
		t.Errorf("JSON lines of no JSON: %d", status)
	}
	status, _, _ = f.post(t, "application/json", strings.NewReader(" \n"))
	if status != http.StatusBadRequest {
		t.Errorf("empty body: %d", status)
	}
	dl := f.deadLetters(t)
	if len(dl) != 2 || dl[0].Body != "hello, world" || dl[0].Reason != "malformed" || dl[1].Body != "a\nb\n" {
		t.Errorf("dead letters %s (the empty body is not one)", js(dl))
	}
	if status, res, _ := f.post(t, "application/xml", strings.NewReader(start)); status != http.StatusUnsupportedMediaType || res.Error == "" {
		t.Errorf("xml: %d %+v", status, res)
	}
	// text/plain names no form: JSON lines must say so.
	if status, res, _ := f.post(t, "text/plain", strings.NewReader(start)); status != http.StatusUnsupportedMediaType || !strings.Contains(res.Error, "application/x-ndjson") {
		t.Errorf("text/plain: %d %+v", status, res)
	}
}

func TestTooLarge(t *testing.T) {
	f := setup(t, gateway.Options{MaxBodyBytes: 1024, DeadLetterBytes: 100})
	body := strings.Repeat(action+"\n", 20)
	for _, tc := range []struct {
		name string
		body io.Reader
		got  string
	}{
		{"with length", strings.NewReader(body), fmt.Sprintf("%d bytes", len(body))},
		{"chunked", io.MultiReader(strings.NewReader(body)), "more than 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, res, _ := f.post(t, "application/x-ndjson", tc.body)
			msg := "too large: expected a request body of at most 1024 bytes, got " + tc.got + "; the dead letter keeps its first 100 bytes"
			want := gateway.Response{Rejected: 1, Error: "request body too large", Errors: []gateway.Problem{{Reason: "too-large", Error: msg}}}
			if status != http.StatusRequestEntityTooLarge || !reflect.DeepEqual(res, want) {
				t.Errorf("%d\n%s\nwant\n%s", status, js(res), js(want))
			}
			dl := f.deadLetters(t)
			last := dl[len(dl)-1]
			if last.Reason != "too-large" || last.Body != body[:100] || last.Error != msg {
				t.Errorf("dead letter %s", js(last))
			}
		})
	}
	if n := len(f.events(t)); n != 0 {
		t.Errorf("%d events stored", n)
	}
}

func TestToken(t *testing.T) {
	f := setup(t, gateway.Options{Token: "s3cret"})
	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret", "s3cret"} {
		status, res, h := f.post(t, "application/json", strings.NewReader(start), "Authorization", auth)
		if status != http.StatusUnauthorized || res.Error == "" || h.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d %+v", auth, status, res)
		}
	}
	if status, _, _ := f.post(t, "application/json", strings.NewReader(start), "Authorization", "bearer s3cret"); status != http.StatusOK {
		t.Errorf("right token: %d", status)
	}
	if n := len(jstest.Messages(t, f.js, schema.StreamDeadLetter)); n != 0 {
		t.Errorf("%d dead letters for unauthorized requests", n)
	}
	resp, err := http.Get(f.url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz without a token: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestUnavailable has no streams to store into: 503.
func TestUnavailable(t *testing.T) {
	_, _, js := jstest.Start(t)
	down := errors.New("nats: disconnected")
	f := serve(t, js, gateway.Options{Health: func() error { return down }})
	status, res, _ := f.post(t, "application/json", strings.NewReader(start))
	if status != http.StatusServiceUnavailable || res.Accepted != 0 || !strings.Contains(res.Error, "sending the request again is safe") {
		t.Errorf("%d %+v", status, res)
	}
	resp, err := http.Get(f.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(data), "disconnected") {
		t.Errorf("healthz: %d %s", resp.StatusCode, data)
	}
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
