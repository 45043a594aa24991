package alert

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// hook is a webhook test server that fails its first request and records
// the deliveries it accepted with a valid signature.
type hook struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	calls  int
	got    []Notification
	ch     chan Notification
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.calls++
	first := h.calls == 1
	h.mu.Unlock()
	if first {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	ts, err := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
	if err != nil || r.Header.Get(HeaderSignature) != Sign(h.secret, ts, body) {
		h.t.Errorf("bad signature %q at %q", r.Header.Get(HeaderSignature), r.Header.Get(HeaderTimestamp))
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil || n.DeliveryID != r.Header.Get(HeaderDelivery) {
		h.t.Errorf("body %s, delivery header %q: %v", body, r.Header.Get(HeaderDelivery), err)
	}
	h.mu.Lock()
	h.got = append(h.got, n)
	h.mu.Unlock()
	h.ch <- n
}

// TestSubscriptions: a violation reaches a signed webhook after a failed
// first attempt and a NATS subscription; a silenced rule reaches neither;
// a verdict seen again after a restart of the stage is not sent twice.
func TestSubscriptions(t *testing.T) {
	nc, js := startVerdicts(t)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	ctx := context.Background()
	kv, err := OpenStore(ctx, js, subjects)
	if err != nil {
		t.Fatal(err)
	}
	h := &hook{t: t, secret: "s3cret", ch: make(chan Notification, 16)}
	srv := httptest.NewServer(h)
	defer srv.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(PutSubscription(ctx, kv, Subscription{ID: "hook", Rules: []string{"tests_*", "quiet*"}, Webhook: srv.URL, Secret: h.secret}))
	must(PutSubscription(ctx, kv, Subscription{ID: "bus", Subject: "ponens.notify.team"}))
	must(PutSilence(ctx, kv, Silence{ID: "q", Rule: "quiet*", Ends: time.Now().Add(time.Hour)}))
	onBus := make(chan *nats.Msg, 16)
	bs, err := nc.ChanSubscribe("ponens.notify.team", onBus)
	must(err)
	defer bs.Unsubscribe()

	put := func(rule string, seq uint64) {
		v := schema.VerdictEvent{RunID: "r1", Seq: seq, Rule: schema.RuleRef{ID: rule}, Status: schema.StatusViolated, Mode: schema.ModeDeny,
			Cause: &schema.Cause{Subformula: "G(commit -> P test)", Event: schema.Event{RunID: "r1", Seq: seq, Type: "action"}}}
		data, _ := json.Marshal(v)
		_, err := js.Publish(ctx, subjects.Verdict(0, "r1"), data)
		must(err)
	}
	run := func() (stop func()) {
		c, cancel := context.WithCancel(ctx)
		d := New(nc, js, subjects, "alerts")
		d.Notifier = NewNotifier(nc, kv)
		d.Notifier.Backoff = 10 * time.Millisecond
		d.Notifier.DashboardURL = "http://dash.example/"
		done := make(chan struct{})
		go func() { defer close(done); _ = d.Run(c) }()
		return func() { cancel(); <-done }
	}
	wait := func(what string) Notification {
		t.Helper()
		select {
		case n := <-h.ch:
			return n
		case <-time.After(10 * time.Second):
			t.Fatalf("no webhook for %s", what)
		}
		return Notification{}
	}

	stop := run()
	put("tests_before_commit", 1)
	first := wait("the first violation")
	if first.Rule != "tests_before_commit" || first.Run != "r1" || first.Link != "http://dash.example/runs/r1" || first.Subformula == "" {
		t.Errorf("notification %+v", first)
	}
	select {
	case m := <-onBus:
		var n Notification
		must(json.Unmarshal(m.Data, &n))
		if n.DeliveryID != first.DeliveryID {
			t.Errorf("bus got %s, webhook %s", n.DeliveryID, first.DeliveryID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing on the NATS subscription")
	}
	e, err := kv.Get(ctx, "status.hook")
	must(err)
	var st DeliveryStatus
	must(json.Unmarshal(e.Value(), &st))
	if st.Attempts != 2 || st.Status != 200 || st.Error != "" {
		t.Errorf("delivery status %+v, want 2 attempts ending in 200", st)
	}
	stop()

	put("tests_before_commit", 1) // the same verdict again, as after a crash before its ack
	put("quiet_rule", 2)          // silenced
	put("other_rule", 3)          // not one of the webhook's rules
	put("tests_eventually", 4)
	stop = run()
	defer stop()
	third := wait("the third verdict")
	if third.Rule != "tests_eventually" {
		t.Errorf("after the restart the webhook got %s first, want tests_eventually (the repeat and the silenced rule skipped)", third.Rule)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.got) != 2 {
		t.Errorf("webhook accepted %d deliveries, want 2: %+v", len(h.got), h.got)
	}
}

// TestSign pins the signature to a vector computed outside Go
// (printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac s3cret), so a
// receiver can check it with any HMAC library.
func TestSign(t *testing.T) {
	const want = "sha256=1698a50bc74d1ff1db85c4e0a5297c2ad9fdba245d5737cdb789e4cc6e098940"
	if got := Sign("s3cret", 1700000000, []byte(`{"a":1}`)); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

// TestSubscriptionValidate: a subscription without exactly one channel, or
// with a bad glob or status, is refused with the field named.
func TestSubscriptionValidate(t *testing.T) {
	for _, s := range []Subscription{
		{ID: "a"},
		{ID: "a", Subject: "x", Webhook: "http://h"},
		{ID: "a.b", Subject: "x"},
		{ID: "a", Subject: "x", Rules: []string{"[bad"}},
		{ID: "a", Subject: "x", Statuses: []schema.VerdictStatus{"broken"}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := (Subscription{ID: "a", Webhook: "http://h", Rules: []string{"tests_*"}}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestAlertsBucketRoles: with authentication on, the alert role makes the
// alerts bucket, stores a subscription in it and publishes on
// <prefix>.notify.>; the sink role may not read it or write it.
func TestAlertsBucketRoles(t *testing.T) {
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	s := jstest.StartSecure(t, subjects)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, ajs, _ := s.Connect(t, transport.RoleAlert)
	kv, err := OpenStore(ctx, ajs, subjects)
	if err != nil {
		t.Fatalf("the alert role opens the bucket: %v", err)
	}
	if err := PutSubscription(ctx, kv, Subscription{ID: "team", Subject: "ponens.notify.team"}); err != nil {
		t.Fatalf("the alert role stores a subscription: %v", err)
	}
	if subs, err := Subscriptions(ctx, kv); err != nil || len(subs) != 1 {
		t.Fatalf("the alert role lists %v, %v", subs, err)
	}
	snc, sjs, _ := s.Connect(t, transport.RoleSink)
	c2, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	_, err = OpenStore(c2, sjs, subjects)
	if refused := transport.Refusal(snc, err); err == nil || refused == nil || !errors.Is(refused, nats.ErrPermissionViolation) {
		t.Fatalf("the sink role opened the alerts bucket: %v", err)
	}
}

// TestGrouping: 1,000 violations of one rule published at once give one
// notification per group window, whose counts add up to 1,000.
func TestGrouping(t *testing.T) {
	nc, js := startVerdicts(t)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv, err := OpenStore(ctx, js, subjects)
	if err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		n  Notification
		at time.Time
	}
	got := make(chan arrival, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Error(err)
		}
		got <- arrival{n, time.Now()}
		time.Sleep(50 * time.Millisecond) // a slow receiver: alerts keep coming while a group is sent
	}))
	defer srv.Close()
	const window = 300 * time.Millisecond
	if err := PutSubscription(ctx, kv, Subscription{ID: "grouped", Webhook: srv.URL, GroupWait: Duration(window), GroupInterval: Duration(window)}); err != nil {
		t.Fatal(err)
	}
	d := New(nc, js, subjects, "alerts")
	d.Notifier = NewNotifier(nc, kv)
	go func() { _ = d.Run(ctx) }()
	const total = 1000
	for i := range total {
		v := schema.VerdictEvent{RunID: "r" + strconv.Itoa(i), Seq: 1, Rule: schema.RuleRef{ID: "tests_before_commit"}, Status: schema.StatusViolated, Mode: schema.ModeDeny}
		data, _ := json.Marshal(v)
		if _, err := js.PublishAsync(subjects.Verdict(0, v.RunID), data); err != nil {
			t.Fatal(err)
		}
	}
	sum, n := 0, 0
	var last time.Time
	for sum < total {
		select {
		case a := <-got:
			n++
			if a.n.Count <= 0 || a.n.Rule != "tests_before_commit" {
				t.Fatalf("notification %d: %+v", n, a.n)
			}
			if !last.IsZero() && a.at.Sub(last) < window/2 {
				t.Errorf("notification %d came %s after the one before, within the group window %s", n, a.at.Sub(last), window)
			}
			last = a.at
			sum += a.n.Count
		case <-time.After(30 * time.Second):
			t.Fatalf("after %d notifications, %d of %d alerts counted", n, sum, total)
		}
	}
	if sum != total || n >= total/10 {
		t.Errorf("%d notifications counting %d alerts, want a few counting %d", n, sum, total)
	}
	t.Logf("%d alerts in %d grouped notifications", sum, n)
}

// TestDeadLetterAndSlack: a webhook that always fails gets its attempts,
// then the alert is kept as a dead letter with the failure in the
// subscription's status; a Slack-compatible webhook gets {"text": ...}.
func TestDeadLetterAndSlack(t *testing.T) {
	nc, js := startVerdicts(t)
	ctx := context.Background()
	kv, err := OpenStore(ctx, js, schema.Subjects{Prefix: "ponens", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	failures := 0
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		failures++
		mu.Unlock()
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	slack := make(chan map[string]string, 1)
	sl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		_ = json.NewDecoder(r.Body).Decode(&m)
		slack <- m
	}))
	defer sl.Close()
	for _, s := range []Subscription{{ID: "down", Webhook: down.URL}, {ID: "slack", Slack: sl.URL}} {
		if err := PutSubscription(ctx, kv, s); err != nil {
			t.Fatal(err)
		}
	}
	n := NewNotifier(nc, kv)
	n.Attempts, n.Backoff = 3, time.Millisecond
	v := schema.VerdictEvent{RunID: "r9", Seq: 4, Rule: schema.RuleRef{ID: "no_env_writes"}, Status: schema.StatusViolated, Mode: schema.ModeDeny}
	if err := n.Notify(ctx, v, Route{}); err != nil {
		t.Fatal(err)
	}
	if failures != 3 {
		t.Errorf("%d attempts, want 3", failures)
	}
	if _, err := kv.Get(ctx, "dead.down."+DeliveryID(v)); err != nil {
		t.Errorf("no dead letter: %v", err)
	}
	e, err := kv.Get(ctx, "status.down")
	if err != nil {
		t.Fatal(err)
	}
	var st DeliveryStatus
	if err := json.Unmarshal(e.Value(), &st); err != nil || st.Status != http.StatusBadGateway || st.Error == "" || st.Attempts != 3 {
		t.Errorf("status %+v, %v", st, err)
	}
	select {
	case m := <-slack:
		if want := "ponens: rule no_env_writes violated in run r9"; !strings.HasPrefix(m["text"], want) {
			t.Errorf("slack text %q, want it to start with %q", m["text"], want)
		}
	default:
		t.Error("nothing on the Slack webhook")
	}
}
