package alert

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// limitsFixture is a notifier over a real alerts bucket and a webhook
// that records the notifications it gets.
type limitsFixture struct {
	t   *testing.T
	kv  jetstream.KeyValue
	n   *Notifier
	url string
	got chan Notification
}

func newLimitsFixture(t *testing.T) *limitsFixture {
	t.Helper()
	nc, js := startVerdicts(t)
	kv, err := OpenStore(context.Background(), js, schema.Subjects{Prefix: "ponens", Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	f := &limitsFixture{t: t, kv: kv, n: NewNotifier(nc, kv), got: make(chan Notification, 64)}
	f.n.Refresh = 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a Notification
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			t.Error(err)
		}
		f.got <- a
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// violate notifies a violation of rule in run.
func (f *limitsFixture) violate(rule, run string) {
	f.t.Helper()
	v := schema.VerdictEvent{RunID: run, Seq: 1, Rule: schema.RuleRef{ID: rule}, Status: schema.StatusViolated, Mode: schema.ModeDeny}
	if err := f.n.Notify(context.Background(), v, Route{}); err != nil {
		f.t.Fatal(err)
	}
}

// flush flushes the groups at now and returns the notifications sent.
func (f *limitsFixture) flush(now time.Time) []Notification {
	f.t.Helper()
	if err := f.n.FlushGroups(context.Background(), now); err != nil {
		f.t.Fatal(err)
	}
	var out []Notification
	for {
		select {
		case a := <-f.got:
			out = append(out, a)
		default:
			return out
		}
	}
}

// A group notified and without new alerts since is notified again
// repeatInterval after its last notification, with its last count and
// repeat set, and not before; new alerts are notified as ever (not as a
// repeat); a silence matching the group stops the repeats.
func TestRepeatInterval(t *testing.T) {
	f := newLimitsFixture(t)
	ctx := context.Background()
	const wait, repeat = 100 * time.Millisecond, time.Hour
	if err := PutSubscription(ctx, f.kv, Subscription{ID: "page", Webhook: f.url, GroupWait: Duration(wait), RepeatInterval: Duration(repeat)}); err != nil {
		t.Fatal(err)
	}
	f.violate("tests_before_commit", "r1")
	f.violate("tests_before_commit", "r2")
	t0 := time.Now()
	first := f.flush(t0.Add(2 * wait))
	if len(first) != 1 || first[0].Count != 2 || first[0].Repeat {
		t.Fatalf("first flush: %+v, want one notification counting 2", first)
	}
	sent := t0.Add(2 * wait)
	if again := f.flush(sent.Add(repeat - time.Second)); len(again) != 0 {
		t.Errorf("before the repeat interval: %+v", again)
	}
	rep := f.flush(sent.Add(repeat))
	if len(rep) != 1 || !rep[0].Repeat || rep[0].Count != 2 || rep[0].Rule != "tests_before_commit" {
		t.Fatalf("at the repeat interval: %+v, want the notification again, repeat set, count 2", rep)
	}
	if again := f.flush(sent.Add(repeat + repeat/2)); len(again) != 0 {
		t.Errorf("half a repeat interval after the repeat: %+v", again)
	}
	f.violate("tests_before_commit", "r3")
	fresh := f.flush(sent.Add(repeat + repeat/2))
	if len(fresh) != 1 || fresh[0].Repeat || fresh[0].Count != 1 || fresh[0].Run != "r3" {
		t.Errorf("a new alert after the repeat: %+v, want it notified, not as a repeat", fresh)
	}
	if err := PutSilence(ctx, f.kv, Silence{ID: "ack", Rule: "tests_*", Ends: sent.Add(10 * repeat)}); err != nil {
		t.Fatal(err)
	}
	if again := f.flush(sent.Add(5 * repeat)); len(again) != 0 {
		t.Errorf("under a silence: %+v", again)
	}
}

// An ungrouped subscription with rateLimit 2 per hour sends the first two
// alerts and keeps the other three as rate-limited (listed so by the
// store); a new period sends again. A grouping subscription with
// rateLimit 1 sends one group per period: the other waits with its count
// and is sent in the next period.
func TestRateLimit(t *testing.T) {
	f := newLimitsFixture(t)
	ctx := context.Background()
	if err := PutSubscription(ctx, f.kv, Subscription{ID: "capped", Webhook: f.url, RateLimit: 2, RatePeriod: Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		f.violate("no_env_writes", "r"+strconv.Itoa(i))
	}
	sent := f.flush(time.Now())
	if len(sent) != 2 || sent[0].Run != "r0" || sent[1].Run != "r1" {
		t.Fatalf("rate limit 2: sent %+v, want r0 and r1", sent)
	}
	f.violate("no_env_writes", "r3") // seen again (a redelivery): not sent, not counted twice
	states, err := Store{KV: f.kv}.Subscriptions(ctx)
	if err != nil || len(states) != 1 || states[0].Delivery.Delivered != 2 || states[0].Delivery.RateLimited != 3 {
		t.Fatalf("the store lists %+v (%v), want 2 delivered and 3 rate-limited", states, err)
	}
	if err := Delete(ctx, f.kv, "sub.capped"); err != nil {
		t.Fatal(err)
	}

	if err := PutSubscription(ctx, f.kv, Subscription{ID: "digest", Webhook: f.url, GroupWait: Duration(time.Millisecond), RateLimit: 1, RatePeriod: Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	f.violate("rule_a", "a1")
	f.violate("rule_b", "b1")
	f.violate("rule_b", "b2")
	t0 := time.Now().Add(time.Second)
	one := f.flush(t0)
	if len(one) != 1 {
		t.Fatalf("rate limit 1: the first flush sent %+v, want one group", one)
	}
	if more := f.flush(t0.Add(30 * time.Minute)); len(more) != 0 {
		t.Errorf("within the period: %+v", more)
	}
	next := f.flush(t0.Add(time.Hour))
	if len(next) != 1 || next[0].Rule == one[0].Rule {
		t.Fatalf("the next period sent %+v, want the other group", next)
	}
	counts := map[string]int{one[0].Rule: one[0].Count, next[0].Rule: next[0].Count}
	if counts["rule_a"] != 1 || counts["rule_b"] != 2 {
		t.Errorf("group counts %v, want rule_a 1 and rule_b 2: the waiting group kept its alerts", counts)
	}
	if states, err := (Store{KV: f.kv}).Subscriptions(ctx); err != nil || len(states) != 1 || states[0].Delivery.Delivered != 2 || states[0].Delivery.RateLimited != 0 {
		t.Errorf("the store lists %+v (%v), want the two group notifications delivered", states, err)
	}
}

// A repeat interval without grouping, or a negative rate limit or period,
// or a period without a limit, is refused with the field named.
func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		s    Subscription
		want string
	}{
		{Subscription{ID: "a", Subject: "x", RepeatInterval: Duration(time.Hour)}, "field repeatInterval: groups are repeated: set groupWait"},
		{Subscription{ID: "a", Subject: "x", GroupWait: 1, RepeatInterval: -1}, "field repeatInterval: must not be negative"},
		{Subscription{ID: "a", Subject: "x", RateLimit: -1}, "field rateLimit"},
		{Subscription{ID: "a", Subject: "x", RateLimit: 1, RatePeriod: -1}, "field ratePeriod: must not be negative"},
		{Subscription{ID: "a", Subject: "x", RatePeriod: Duration(time.Minute)}, "field ratePeriod: set rateLimit"},
	} {
		if err := c.s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	if err := (Subscription{ID: "a", Subject: "x", GroupWait: 1, RepeatInterval: Duration(time.Hour), RateLimit: 10}).Validate(); err != nil {
		t.Error(err)
	}
}
