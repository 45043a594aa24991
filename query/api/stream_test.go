package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport/jstest"
)

// TestStream: /v1/stream sends the verdicts published after it opened
// that match its filters (status, rule glob, agent from the message's
// headers), as server-sent events, with the agent, project and severity
// the headers name; a bad filter is bad_data; without NATS it is
// not found, and saying why.
func TestStream(t *testing.T) {
	_, nc, _ := jstest.Start(t)
	sub := schema.Subjects{Prefix: "ponens", Partitions: 2}
	s, err := New(Options{Store: chdb.Querier{E: engine}, Live: NATSLive{Conn: nc, Subjects: sub}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/stream?status=violated&rule=tests_*&agent=coder-7", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	rd := bufio.NewReader(resp.Body)
	if line, _ := rd.ReadString('\n'); !strings.HasPrefix(line, ":") { // the opening comment: subscribed by now
		t.Fatalf("first line %q", line)
	}
	publish := func(run, rule string, status schema.VerdictStatus, agent string) {
		v := schema.VerdictEvent{RunID: run, Seq: 3, Rule: schema.RuleRef{ID: rule}, Status: status, Mode: schema.ModeObserve,
			Cause: &schema.Cause{Subformula: "P(RunTests)", Event: schema.Event{RunID: run, Seq: 3, Type: "action"}}}
		m := nats.NewMsg(sub.Verdict(0, run))
		m.Data, _ = json.Marshal(v)
		m.Header.Set(schema.HeaderAgent, agent)
		m.Header.Set(schema.HeaderProject, "payments")
		m.Header.Set(schema.HeaderSeverity, "error")
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	publish("r1", "tests_before_commit", schema.StatusSatisfied, "coder-7") // not violated
	publish("r2", "other_rule", schema.StatusViolated, "coder-7")           // not the rule
	publish("r3", "tests_before_commit", schema.StatusViolated, "coder-8")  // not the agent
	publish("r4", "tests_before_commit", schema.StatusViolated, "coder-7")  // this one
	var event, data string
	for data == "" {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	var got struct {
		RunID, Agent, Project, Severity string
		Status                          schema.VerdictStatus
		Cause                           *schema.Cause
	}
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatal(err)
	}
	if event != "verdict" || got.RunID != "r4" || got.Agent != "coder-7" || got.Project != "payments" || got.Severity != "error" || got.Status != schema.StatusViolated ||
		got.Cause == nil || got.Cause.Subformula != "P(RunTests)" {
		t.Fatalf("event %q data %s: want r4's violation with its agent, project and severity", event, data)
	}

	if code, body := get(t, srv.URL+"/v1/stream?status=broken"); code != 400 || !strings.Contains(string(body), "parameter status") {
		t.Errorf("a bad status: %d %s", code, body)
	}
	plain := newTestServer(t)
	if code, body := get(t, plain.URL+"/v1/stream"); code != 404 || !strings.Contains(string(body), "no live stream") {
		t.Errorf("without NATS: %d %s", code, body)
	}
}

// An open stream ends when the service shuts down: its client reads the
// end of the body, instead of a stream kept open by a handler that
// outlives the server.
func TestStreamEndsAtShutdown(t *testing.T) {
	_, nc, _ := jstest.Start(t)
	s, err := New(Options{Listen: "127.0.0.1:0", Store: chdb.Querier{E: engine}, Live: NATSLive{Conn: nc, Subjects: schema.Subjects{Prefix: "ponens", Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	resp, err := http.Get("http://" + addr.String() + "/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, rd); ended <- err }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream is still open 10 s after the shutdown")
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
