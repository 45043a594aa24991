package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/jstest"
)

// The tokens of the admin tests.
const (
	readToken  = "r34d-token"
	adminToken = "4dm1n-token"
)

// adminFixture is a query service over a real alerts bucket (embedded
// NATS) with a read token and an admin token, and a notifier over the
// same bucket.
type adminFixture struct {
	t      *testing.T
	url    string
	notify *alert.Notifier
}

func tokenOf(t *testing.T, name, text, scope string) Token {
	t.Helper()
	sum := sha256.Sum256([]byte(text))
	tok, ok := ParseToken(name, hex.EncodeToString(sum[:]), scope)
	if !ok {
		t.Fatalf("token %s refused", name)
	}
	return tok
}

func startAdmin(t *testing.T) *adminFixture {
	t.Helper()
	_, nc, js := jstest.Start(t)
	kv, err := alert.OpenStore(context.Background(), js, schema.Subjects{Prefix: "ponens", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Store: chdbQ(), Alerts: alert.Store{KV: kv},
		Tokens: []Token{tokenOf(t, "readers", readToken, ScopeRead), tokenOf(t, "operators", adminToken, ScopeAdmin)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	n := alert.NewNotifier(nc, kv)
	n.Attempts, n.Backoff, n.Refresh = 2, time.Millisecond, 0
	return &adminFixture{t: t, url: ts.URL, notify: n}
}

// call makes a request with body (JSON when not nil) and the bearer
// token auth (none when empty) and returns the status and the body.
func (f *adminFixture) call(method, path, auth string, body any) (int, string) {
	f.t.Helper()
	var rd io.Reader
	if s, ok := body.(string); ok {
		rd = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With tokens configured, an admin route refuses a request without a
// token (401), with a token that is not configured (401) and, for a
// write, with a read token (403), each in the error envelope with its
// type; the admin token writes, and both tokens read.
func TestAdminAuth(t *testing.T) {
	f := startAdmin(t)
	sub := map[string]any{"webhook": "https://hooks.example.com/x"}
	for _, c := range []struct {
		name, method, path, auth string
		code                     int
		want                     string
	}{
		{"no token", "PUT", "/v1/subscriptions/ops", "", 401, `"errorType":"unauthorized"`},
		{"wrong token", "PUT", "/v1/subscriptions/ops", "n0t-" + adminToken, 401, `"errorType":"unauthorized","error":"the token is not one of query.tokens"`},
		{"read token writing", "PUT", "/v1/subscriptions/ops", readToken, 403, `"errorType":"forbidden","error":"token \"readers\" has scope \"read\": PUT /v1/subscriptions/{id} needs a token of scope admin"`},
		{"read token deleting", "DELETE", "/v1/silences/x", readToken, 403, `"errorType":"forbidden"`},
		{"admin token", "PUT", "/v1/subscriptions/ops", adminToken, 200, `"status":"success"`},
		{"read token reading", "GET", "/v1/subscriptions", readToken, 200, `"id":"ops"`},
		{"no token reading", "GET", "/v1/silences", "", 401, `"errorType":"unauthorized"`},
	} {
		code, body := f.call(c.method, c.path, c.auth, sub)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %s %s: %d %s, want %d with %s", c.name, c.method, c.path, code, body, c.code, c.want)
		}
	}
}

// subscriptionsAnswer is what the test reads of GET /v1/subscriptions.
type subscriptionsAnswer struct {
	Data struct {
		Subscriptions []alert.SubscriptionState `json:"subscriptions"`
	} `json:"data"`
}

// A subscription stored with PUT is listed, without its secret, and is
// the one the alert stage delivers to; its delivery state (attempts, last
// status, delivered and dead-lettered counts, last error) is what the
// notifier recorded; a bad one is refused with the field named; DELETE
// removes it, and a second DELETE is not_found.
func TestSubscriptionRoutes(t *testing.T) {
	f := startAdmin(t)
	var calls atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	}))
	defer hook.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) }))
	defer down.Close()
	for id, body := range map[string]map[string]any{
		"ops":  {"id": "ops", "rules": []string{"tests_*"}, "webhook": hook.URL, "secret": "hush-hush-s3cret"},
		"down": {"webhook": down.URL, "groupWait": "0s"},
	} {
		if code, out := f.call("PUT", "/v1/subscriptions/"+id, adminToken, body); code != 200 || strings.Contains(out, "hush") {
			t.Fatalf("PUT %s: %d %s", id, code, out)
		}
	}
	ctx := context.Background()
	v := schema.VerdictEvent{RunID: "r1", Seq: 3, Rule: schema.RuleRef{ID: "tests_before_commit"}, Status: schema.StatusViolated, Mode: schema.ModeDeny}
	if err := f.notify.Notify(ctx, v, alert.Route{}); err != nil {
		t.Fatal(err)
	}
	code, out := f.call("GET", "/v1/subscriptions", readToken, nil)
	var got subscriptionsAnswer
	if err := json.Unmarshal([]byte(out), &got); code != 200 || err != nil || len(got.Data.Subscriptions) != 2 {
		t.Fatalf("GET /v1/subscriptions: %d %s (%v)", code, out, err)
	}
	if strings.Contains(out, "hush") || strings.Contains(out, `"secret"`) {
		t.Errorf("the list shows a secret: %s", out)
	}
	dn, ops := got.Data.Subscriptions[0], got.Data.Subscriptions[1]
	if ops.ID != "ops" || !ops.SecretSet || ops.Delivery.LastAttempts != 2 || ops.Delivery.LastStatus != 200 || ops.Delivery.Delivered != 1 || ops.Delivery.Dead != 0 || ops.Delivery.LastError != "" {
		t.Errorf("ops: %+v, want its secret set and one delivery in 2 attempts ending in 200", ops)
	}
	if dn.ID != "down" || dn.SecretSet || dn.Delivery.Dead != 1 || dn.Delivery.Delivered != 0 || dn.Delivery.LastStatus != 502 || !strings.Contains(dn.Delivery.LastError, "502") {
		t.Errorf("down: %+v, want one dead letter after HTTP 502", dn)
	}
	for _, c := range []struct {
		path string
		body any
		want string
	}{
		{"/v1/subscriptions/bad", map[string]any{"webhook": hook.URL, "rules": []string{"[x"}}, "subscription bad: field rules: glob"},
		{"/v1/subscriptions/bad", map[string]any{"webhook": hook.URL, "subject": "ponens.notify.x"}, "give exactly one channel"},
		{"/v1/subscriptions/bad", map[string]any{"webhook": hook.URL, "statuses": []string{"broken"}}, "field statuses"},
		{"/v1/subscriptions/bad", map[string]any{"webhook": hook.URL, "minSeverity": "dire"}, "field minSeverity"},
		{"/v1/subscriptions/bad", map[string]any{"webhook": hook.URL, "hook": "x"}, `unknown field \"hook\"`},
		{"/v1/subscriptions/bad", map[string]any{"id": "other", "webhook": hook.URL}, `field id: \"other\" is not the path's \"bad\"`},
		{"/v1/subscriptions/a.b", map[string]any{"webhook": hook.URL}, "field id: want a name without spaces, dots or wildcards"},
		{"/v1/subscriptions/bad", `{"webhook": "x"`, "body: want a JSON object"},
		{"/v1/subscriptions/bad", map[string]any{"webhook": hook.URL, "groupWait": "soon"}, `cannot unmarshal \"soon\" (want a duration such as \"30s\") into Go struct field Subscription.groupWait`},
	} {
		if code, out := f.call("PUT", c.path, adminToken, c.body); code != 400 || !strings.Contains(out, `"errorType":"bad_data"`) || !strings.Contains(out, c.want) {
			t.Errorf("PUT %s %v: %d %s, want 400 naming %s", c.path, c.body, code, out, c.want)
		}
	}
	if code, out := f.call("DELETE", "/v1/subscriptions/down", adminToken, nil); code != 200 || !strings.Contains(out, `"deleted":"down"`) {
		t.Errorf("DELETE: %d %s", code, out)
	}
	if code, out := f.call("DELETE", "/v1/subscriptions/down", adminToken, nil); code != 404 || !strings.Contains(out, `"errorType":"not_found"`) {
		t.Errorf("DELETE again: %d %s, want 404", code, out)
	}
	if _, out := f.call("GET", "/v1/subscriptions", adminToken, nil); strings.Contains(out, `"id":"down"`) || strings.Contains(out, `"id":"bad"`) {
		t.Errorf("after the delete and the refused PUTs: %s", out)
	}
}

// A silence stored with PUT (for a while from now) is listed and keeps
// its alerts from the subscriptions; one that has ended, or gives both
// ends and for, is refused with the field named; DELETE removes it and
// the alerts flow again.
func TestSilenceRoutes(t *testing.T) {
	f := startAdmin(t)
	got := make(chan string, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n alert.Notification
		_ = json.NewDecoder(r.Body).Decode(&n)
		got <- n.Run
	}))
	defer hook.Close()
	if code, out := f.call("PUT", "/v1/subscriptions/all", adminToken, map[string]any{"webhook": hook.URL}); code != 200 {
		t.Fatalf("PUT subscription: %d %s", code, out)
	}
	if code, out := f.call("PUT", "/v1/silences/quiet", adminToken, map[string]any{"rule": "noisy_*", "for": "1h"}); code != 200 || !strings.Contains(out, `"rule":"noisy_*"`) {
		t.Fatalf("PUT silence: %d %s", code, out)
	}
	for _, c := range []struct {
		body any
		want string
	}{
		{map[string]any{"ends": time.Now().Add(-time.Minute).UTC()}, "silence late: field ends: must be in the future"},
		{map[string]any{"ends": time.Now().Add(time.Hour).UTC(), "for": "1h"}, "fields ends, for: give one of them"},
		{map[string]any{"rule": "[x", "for": "1h"}, "field rule: glob"},
		{map[string]any{"rule": "x"}, "field ends"},
	} {
		if code, out := f.call("PUT", "/v1/silences/late", adminToken, c.body); code != 400 || !strings.Contains(out, c.want) {
			t.Errorf("PUT silence %v: %d %s, want 400 naming %s", c.body, code, out, c.want)
		}
	}
	code, out := f.call("GET", "/v1/silences", readToken, nil)
	if code != 200 || !strings.Contains(out, `"id":"quiet"`) || strings.Contains(out, `"id":"late"`) {
		t.Errorf("GET /v1/silences: %d %s", code, out)
	}
	notify := func(run string) {
		v := schema.VerdictEvent{RunID: run, Seq: 1, Rule: schema.RuleRef{ID: "noisy_rule"}, Status: schema.StatusViolated, Mode: schema.ModeDeny}
		if err := f.notify.Notify(context.Background(), v, alert.Route{}); err != nil {
			t.Fatal(err)
		}
	}
	notify("silenced")
	if code, out := f.call("DELETE", "/v1/silences/quiet", adminToken, nil); code != 200 {
		t.Fatalf("DELETE silence: %d %s", code, out)
	}
	notify("heard")
	select {
	case run := <-got:
		if run != "heard" {
			t.Errorf("the webhook got run %s first, want heard (silenced was under the silence)", run)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered after the silence was deleted")
	}
}

// A service without the alerts bucket answers the admin routes 404,
// saying it has none.
func TestAdminRoutesAbsent(t *testing.T) {
	ts := newTestServer(t)
	for _, path := range []string{"/v1/subscriptions", "/v1/silences/x"} {
		if code, body := get(t, ts.URL+path); code != 404 || !strings.Contains(string(body), "no alerts bucket") {
			t.Errorf("GET %s without the bucket: %d %s", path, code, body)
		}
	}
}
