package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/monitor/remote"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/jstest"
)

// plainConn connects to a NATS server without JetStream, where the test
// answers decision requests itself, on one partition's subjects.
func plainConn(t *testing.T) (*nats.Conn, schema.Subjects) {
	t.Helper()
	nc, err := nats.Connect(jstest.Plain(t, func(*server.Options) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, schema.Subjects{Prefix: "ponens", Partitions: 1}
}

// TestDecideRefusesAnswersWithoutDecision: an answer that is neither a
// decision nor a worker's error (an empty object, an unknown decision) is
// an error, never an allow.
func TestDecideRefusesAnswersWithoutDecision(t *testing.T) {
	nc, subjects := plainConn(t)
	for _, answer := range []string{`{}`, `{"decision":""}`, `{"decision":"yes"}`, `{"rule":"x","reason":"looks fine"}`} {
		sub, err := nc.Subscribe(subjects.Decide(0), func(m *nats.Msg) { _ = m.Respond([]byte(answer)) })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d, err := remote.Decide(ctx, nc, subjects, "r", &schema.Action{ID: 1, Type: "ReadFile"})
		cancel()
		_ = sub.Unsubscribe()
		if err == nil || !strings.Contains(err.Error(), "neither a decision") {
			t.Fatalf("answer %s: %+v, %v", answer, d, err)
		}
	}
	sub, err := nc.Subscribe(subjects.Decide(0), func(m *nats.Msg) { _ = m.Respond([]byte(`{"decision":"deny","reason":"r"}`)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if d, err := remote.Decide(context.Background(), nc, subjects, "r", &schema.Action{ID: 1, Type: "ReadFile"}); err != nil || d.Decision != "deny" {
		t.Fatalf("a decision: %+v, %v", d, err)
	}
}

// TestDecideSaysWhyWhenTimeRunsOut: when the context ends while an attempt
// waits, the error says why the attempts before it were not answered (here
// a worker asking to retry), not only that the time ran out.
func TestDecideSaysWhyWhenTimeRunsOut(t *testing.T) {
	nc, subjects := plainConn(t)
	asked := 0
	sub, err := nc.Subscribe(subjects.Decide(0), func(m *nats.Msg) {
		if asked++; asked == 1 { // then silent, as a worker stuck or cut off
			_ = m.Respond([]byte(`{"error":"partition restoring its runs; retry","retry":true}`))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = remote.Decide(ctx, nc, subjects, "r", &schema.Action{ID: 1, Type: "ReadFile"})
	if err == nil || !strings.Contains(err.Error(), "partition restoring its runs") || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("Decide = %v, want the worker's reason and the deadline", err)
	}
}
