package alert

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/jstest"
)

// startVerdicts starts an in-process JetStream server on loopback with the
// VERDICTS stream of the "ponens" prefix.
func startVerdicts(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	_, nc, js := jstest.Start(t)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: schema.StreamVerdicts, Subjects: []string{subjects.VerdictsIn()}}); err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// TestDispatch: violations in the verdicts stream reach the alert subject
// of their rule; other statuses do not; a dispatcher restarted later
// delivers what arrived while it was down.
func TestDispatch(t *testing.T) {
	nc, js := startVerdicts(t)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	ctx := context.Background()
	alerts := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(subjects.Prefix+".alerts.>", alerts)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	put := func(rule string, st schema.VerdictStatus) {
		v := schema.VerdictEvent{RunID: "r", Seq: 1, Rule: schema.RuleRef{ID: rule}, Status: st, Mode: schema.ModeDeny}
		data, _ := json.Marshal(v)
		if _, err := js.Publish(ctx, subjects.Verdict(0, "r"), data); err != nil {
			t.Fatal(err)
		}
	}
	put("tests_before_commit", schema.StatusViolated)
	put("tests_eventually", schema.StatusPending)
	put("no.env/writes", schema.StatusViolated) // a rule id that needs encoding
	{                                           // a later version of a rule: announced on the rule's own subject
		data, _ := json.Marshal(schema.VerdictEvent{RunID: "r", Seq: 2, Rule: schema.RuleRef{ID: "edits@2"}, Status: schema.StatusViolated, Mode: schema.ModeObserve})
		msg := nats.NewMsg(subjects.Verdict(0, "r"))
		msg.Data = data
		msg.Header.Set(schema.HeaderRule, "edits")
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}

	run := func() context.CancelFunc {
		c, cancel := context.WithCancel(ctx)
		go func() { _ = New(nc, js, subjects, "alerts").Run(c) }()
		return cancel
	}
	stop := run()
	got := map[string]string{}
	for range 3 {
		select {
		case m := <-alerts:
			var a Alert
			if err := json.Unmarshal(m.Data, &a); err != nil {
				t.Fatal(err)
			}
			got[m.Subject] = a.Verdict.Rule.ID
		case <-time.After(5 * time.Second):
			t.Fatalf("alerts so far: %v", got)
		}
	}
	if got[subjects.Alert("tests_before_commit")] != "tests_before_commit" || got[subjects.Alert("no.env/writes")] != "no.env/writes" ||
		got[subjects.Alert("edits")] != "edits@2" {
		t.Errorf("alerts %v", got)
	}
	stop()
	select {
	case m := <-alerts:
		t.Errorf("unexpected alert %s", m.Data)
	case <-time.After(300 * time.Millisecond):
	}
	put("late_rule", schema.StatusViolated) // while the dispatcher is down
	stop = run()
	defer stop()
	select {
	case m := <-alerts:
		if m.Subject != subjects.Alert("late_rule") {
			t.Errorf("late alert on %s", m.Subject)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the alert published while the dispatcher was down never came")
	}
}

// TestOtherAckPolicyRefused: a durable consumer of the same name with
// another ack policy (a development build's) is not replaced, which could
// lose its place: the dispatcher refuses to start and says what to do.
func TestOtherAckPolicyRefused(t *testing.T) {
	nc, js := startVerdicts(t)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 4}
	ctx := context.Background()
	if _, err := js.CreateConsumer(ctx, schema.StreamVerdicts, jetstream.ConsumerConfig{Durable: "old", AckPolicy: jetstream.AckAllPolicy, FilterSubject: subjects.VerdictsIn()}); err != nil {
		t.Fatal(err)
	}
	run, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := New(nc, js, subjects, "old").Run(run)
	if err == nil || !strings.Contains(err.Error(), "nats consumer rm VERDICTS old") {
		t.Errorf("Run with an ack-all consumer: %v", err)
	}
	c, err := js.Consumer(ctx, schema.StreamVerdicts, "old")
	if err != nil || c.CachedInfo().Config.AckPolicy != jetstream.AckAllPolicy {
		t.Errorf("the consumer was changed: %v", err)
	}
}
