package worker

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/monitor/remote"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// securePipeline is the pipeline on a server that requires TLS with client
// certificates and per-role nkeys: streams provisioned by the admin, a
// worker and the alert stage each connected in its role.
type securePipeline struct {
	s     *jstest.Secure
	admin natsjs.JetStream
	conns map[transport.Role]*nats.Conn
	jss   map[transport.Role]natsjs.JetStream
	errs  map[transport.Role]<-chan error
}

func startSecurePipeline(t *testing.T) *securePipeline {
	t.Helper()
	p := &securePipeline{s: jstest.StartSecure(t, subjects), conns: map[transport.Role]*nats.Conn{},
		jss: map[transport.Role]natsjs.JetStream{}, errs: map[transport.Role]<-chan error{}}
	for _, r := range transport.Roles {
		p.conns[r], p.jss[r], p.errs[r] = p.s.Connect(t, r)
	}
	p.admin = p.jss[transport.RoleAdmin]
	cfg := transport.StreamConfig{Prefix: subjects.Prefix, Partitions: testPartitions, Duplicates: 10 * time.Minute}
	if err := transport.Provision(context.Background(), p.admin, cfg); err != nil {
		t.Fatal(err)
	}
	w, cancel, done := startWorker(t, p.conns[transport.RoleWorker], p.jss[transport.RoleWorker], "w", rules(t), func(w *Worker) { w.opts.IdleAfter = time.Minute })
	t.Cleanup(func() { cancel(); <-done })
	ctx, stopAlerts := context.WithCancel(context.Background())
	alerted := make(chan error, 1)
	go func() {
		alerted <- alert.New(p.conns[transport.RoleAlert], p.jss[transport.RoleAlert], subjects, "ponens-alerts").Run(ctx)
	}()
	t.Cleanup(func() {
		stopAlerts()
		if err := <-alerted; err != nil {
			t.Errorf("alert stage: %v", err)
		}
	})
	waitFor(t, 20*time.Second, "the worker to own every partition", func() bool { return len(w.Owned()) == testPartitions })
	return p
}

// refused waits for the server to report to a client of role a permission
// violation of what ("Publish to \"subject\"" or "Subscription to
// \"subject\"").
func (p *securePipeline) refused(t *testing.T, role transport.Role, what string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-p.errs[role]:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(strings.ToLower(err.Error()), strings.ToLower(what)) {
				return
			}
		case <-deadline:
			t.Fatalf("%s: no permission violation for %s", role, what)
		}
	}
}

// others is every role but the given ones.
func others(allowed ...transport.Role) []transport.Role {
	var out []transport.Role
	for _, r := range transport.Roles {
		if r != transport.RoleAdmin && !slices.Contains(allowed, r) {
			out = append(out, r)
		}
	}
	return out
}

// envWrite is the tool call the example POLICY.md denies.
func envWrite(id int64) *schema.Action {
	return &schema.Action{ID: id, Type: "ToolCall", Capability: "file.write", ToolName: "write_file", Payload: json.RawMessage(`{"path":"config/.env"}`)}
}

// TestForgeriesRefused: a client holding the credentials of a role that
// may not do so cannot forge a verdict, announce an alert, answer
// decisions (or see their requests), delete or purge a stream, or read
// another role's replies; meanwhile the real clients, each in its role,
// publish, judge, alert and decide.
func TestForgeriesRefused(t *testing.T) {
	p := startSecurePipeline(t)
	sinkConn := p.conns[transport.RoleSink]
	var alerts atomic.Int64
	var forgedAlerts atomic.Int64
	asub, err := sinkConn.Subscribe(subjects.Prefix+".alerts.>", func(m *nats.Msg) {
		var a alert.Alert
		if json.Unmarshal(m.Data, &a) == nil && a.Verdict.RunID == "real" {
			alerts.Add(1)
		} else {
			forgedAlerts.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer asub.Unsubscribe()
	if err := sinkConn.Flush(); err != nil {
		t.Fatal(err)
	}

	// The real agent's run: a commit without tests, a violation.
	pub := transport.NewPublisher(p.jss[transport.RoleAgent], subjects, transport.PublisherOptions{})
	for i, err := range pub.PublishBatch(context.Background(), []*schema.Event{
		runEvent("real", 1, schema.TypeRunStart, nil),
		runEvent("real", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "GitCommit"}),
	}) {
		if err != nil {
			t.Fatalf("agent event %d: %v", i, err)
		}
	}
	pub.Close()
	waitFor(t, 20*time.Second, "the real violation's alert", func() bool { return alerts.Load() > 0 })
	verdicts := verdictCount(p.admin)
	time.Sleep(300 * time.Millisecond) // checkpoints, lease renewals
	for r, errs := range p.errs {
		select {
		case err := <-errs:
			t.Fatalf("the real %s was refused something: %v", r, err)
		default:
		}
	}

	t.Run("verdict", func(t *testing.T) {
		subject := subjects.Prefix + ".verdicts.3.victim-run"
		v := schema.VerdictEvent{RunID: "victim-run", Seq: 9, Status: "violated", Rule: schema.RuleRef{ID: "tests_before_commit"}}
		data, _ := json.Marshal(v)
		for _, r := range others(transport.RoleWorker) {
			msg := nats.NewMsg(subject)
			msg.Data = data
			msg.Header.Set(natsjs.MsgIDHeader, "victim-run:tests_before_commit:9:"+string(r))
			if err := p.conns[r].PublishMsg(msg); err != nil {
				t.Fatal(err)
			}
			p.refused(t, r, `publish to "`+subject+`"`)
		}
		if n := verdictCount(p.admin); n != verdicts {
			t.Fatalf("VERDICTS holds %d messages, %d before the forgeries", n, verdicts)
		}
	})
	t.Run("alert", func(t *testing.T) {
		subject := subjects.Alert("tests_before_commit")
		for _, r := range others(transport.RoleAlert) {
			if err := p.conns[r].Publish(subject, []byte(`{"verdict":{"runId":"never-was","status":"violated"}}`)); err != nil {
				t.Fatal(err)
			}
			p.refused(t, r, `publish to "`+subject+`"`)
		}
	})
	t.Run("decide", func(t *testing.T) {
		for _, r := range others(transport.RoleWorker) {
			sub, err := p.conns[r].Subscribe(subjects.Prefix+".decide.>", func(m *nats.Msg) { _ = m.Respond([]byte(`{"decision":"allow"}`)) })
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			p.refused(t, r, `subscription to "`+subjects.Prefix+`.decide.>"`)
		}
		// A forged answer straight to the agents' inbox is refused too.
		for _, r := range others(transport.RoleWorker, transport.RoleAgent) {
			if err := p.conns[r].Publish(transport.InboxPrefix(transport.RoleAgent)+".x", []byte(`{"decision":"allow"}`)); err != nil {
				t.Fatal(err)
			}
			p.refused(t, r, `publish to "`+transport.InboxPrefix(transport.RoleAgent)+`.x"`)
		}
		for i := range 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			d, err := remote.Decide(ctx, p.conns[transport.RoleAgent], subjects, "real", envWrite(int64(10+i)))
			cancel()
			if err != nil || d.Decision != "deny" {
				t.Fatalf("decision %d on a .env write: %+v, %v (not the real worker's deny)", i, d, err)
			}
		}
	})
	t.Run("streams", func(t *testing.T) {
		for _, r := range others() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := p.jss[r].DeleteStream(ctx, schema.StreamVerdicts)
			cancel()
			if err == nil {
				t.Fatalf("%s deleted VERDICTS", r)
			}
			p.refused(t, r, `publish to "$JS.API.STREAM.DELETE.`+schema.StreamVerdicts+`"`)
			ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
			err = p.jss[r].DeleteStream(ctx, schema.StreamEvents)
			cancel()
			if err == nil {
				t.Fatalf("%s deleted EVENTS", r)
			}
			p.refused(t, r, `publish to "$JS.API.STREAM.DELETE.`+schema.StreamEvents+`"`)
			st, err := p.admin.Stream(context.Background(), schema.StreamVerdicts)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.conns[r].Publish("$JS.API.STREAM.PURGE."+schema.StreamVerdicts, nil); err != nil {
				t.Fatal(err)
			}
			p.refused(t, r, `publish to "$JS.API.STREAM.PURGE.`+schema.StreamVerdicts+`"`)
			if n := st.CachedInfo().State.Msgs; int(n) != verdictCount(p.admin) || n == 0 {
				t.Fatalf("VERDICTS changed: %d messages", n)
			}
		}
	})
	t.Run("inboxes", func(t *testing.T) {
		for _, r := range others() {
			for _, snoop := range []string{"_INBOX.>", transport.InboxPrefix(transport.RoleAgent) + ".>"} {
				if r == transport.RoleAgent && strings.HasPrefix(snoop, transport.InboxPrefix(r)) {
					continue // its own
				}
				sub, err := p.conns[r].Subscribe(snoop, func(*nats.Msg) {})
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Unsubscribe()
				p.refused(t, r, `subscription to "`+snoop+`"`)
			}
		}
	})
	if n := forgedAlerts.Load(); n != 0 {
		t.Fatalf("%d forged alerts reached a subscriber", n)
	}
	if alerts.Load() != 1 {
		t.Fatalf("%d real alerts, want 1", alerts.Load())
	}
}

// TestRunMismatch: an event whose body names another run than the subject
// it was published on is judged in neither run: it goes to the dead
// letters as run-mismatch.
func TestRunMismatch(t *testing.T) {
	nc, js := startJS(t)
	w, cancel, done := startWorker(t, nc, js, "w", rules(t), func(w *Worker) { w.opts.IdleAfter = time.Minute })
	defer func() { cancel(); <-done }()
	waitFor(t, 20*time.Second, "the worker to own every partition", func() bool { return len(w.Owned()) == testPartitions })
	publish(t, js, runEvent("victim3", 1, schema.TypeRunStart, nil), "v1")
	ev := runEvent("other", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "GitCommit"})
	data, _ := json.Marshal(ev)
	msg := nats.NewMsg(subjects.Event("victim3"))
	msg.Data = data
	if _, err := js.PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the dead letter", func() bool { return len(storedDeadLetters(js)) == 1 })
	dl := storedDeadLetters(js)[0]
	if !strings.HasPrefix(dl, schema.ReasonRunMismatch+": ") || !strings.Contains(dl, `"other"`) || !strings.Contains(dl, `"victim3"`) {
		t.Fatalf("dead letter %q", dl)
	}
	got, _ := stored(t, js)
	if len(got["other"]) != 0 {
		t.Fatalf("run other was judged: %v", got["other"])
	}
	for _, v := range got["victim3"] {
		if strings.Contains(v, `"violated"`) {
			t.Fatalf("run victim3 was judged on the other run's event: %s", v)
		}
	}
}
