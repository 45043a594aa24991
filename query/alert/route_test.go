package alert_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

const routeRules = `version: 1
rules:
  - id: commit_tested
    severity: error
    formula: G(GitCommit → P(RunTests ∧ completed))
  - id: commit_read
    severity: info
    formula: G(GitCommit → P(ReadFile))
`

// TestRoutedByRunAndSeverity: a real worker puts each run's agent and
// project and each rule's severity on its verdicts, and the alert stage
// matches subscriptions on them: on the agent, on the project, on the
// minimum severity; the alerts subject carries them too. Two runs of two
// agents and projects each violate both rules.
func TestRoutedByRunAndSeverity(t *testing.T) {
	_, nc, js := jstest.Start(t)
	subjects := schema.Subjects{Prefix: "ponens", Partitions: 2}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	if err := transport.Provision(ctx, js, transport.StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(routeRules), 0o644); err != nil {
		t.Fatal(err)
	}
	set, probs := ruleset.Load(file)
	if probs != nil {
		t.Fatal(probs)
	}
	w, err := worker.New(nc, js, worker.Options{ID: "w", Subjects: subjects, Rules: set, LeaseTTL: time.Second, CheckpointEvery: 50 * time.Millisecond,
		DeadLetter: func(context.Context, string, error, []byte) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { _ = w.Run(ctx) })
	kv, err := alert.OpenStore(ctx, js, subjects)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []alert.Subscription{
		{ID: "agent", Agents: []string{"coder-7"}, Subject: "ponens.notify.agent"},
		{ID: "project", Projects: []string{"payments"}, Subject: "ponens.notify.project"},
		{ID: "severe", MinSeverity: "error", Subject: "ponens.notify.severe"},
	} {
		if err := alert.PutSubscription(ctx, kv, s); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string][]string{} // subject → "run rule agent project severity"
	record := func(m *nats.Msg) {
		var n alert.Notification
		var a alert.Alert
		line := ""
		if json.Unmarshal(m.Data, &n) == nil && n.DeliveryID != "" {
			line = fmt.Sprintf("%s %s %s %s %s", n.Run, n.Rule, n.Agent, n.Project, n.Severity)
		} else if json.Unmarshal(m.Data, &a) == nil {
			line = fmt.Sprintf("%s %s %s %s %s", a.Verdict.RunID, a.Verdict.Rule.ID, a.Agent, a.Project, a.Severity)
		}
		mu.Lock()
		got[m.Subject] = append(got[m.Subject], line)
		mu.Unlock()
	}
	for _, subj := range []string{"ponens.notify.>", "ponens.alerts.>"} {
		s, err := nc.Subscribe(subj, record)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Unsubscribe()
	}
	d := alert.New(nc, js, subjects, "ponens-alerts")
	d.Notifier = alert.NewNotifier(nc, kv)
	wg.Go(func() { _ = d.Run(ctx) })

	pub := transport.NewPublisher(js, subjects, transport.PublisherOptions{})
	defer pub.Close()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, r := range []struct{ run, agent, project string }{{"r1", "coder-7", "payments"}, {"r2", "coder-8", "web"}} {
		events := []string{
			fmt.Sprintf(`{"v":1,"runId":%q,"seq":1,"ts":%q,"type":"run.start","start":{"agent":%q,"extra":{"project":%q}}}`, r.run, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), r.agent, r.project),
			fmt.Sprintf(`{"v":1,"runId":%q,"seq":2,"ts":%q,"type":"action","action":{"id":1,"type":"GitCommit","category":"activity","status":"completed"}}`, r.run, t0.Add(time.Minute).Format(time.RFC3339)),
			fmt.Sprintf(`{"v":1,"runId":%q,"seq":3,"ts":%q,"type":"run.finish","end":{"outcome":{"type":"ProcessCompleted"}}}`, r.run, t0.Add(2*time.Minute).Format(time.RFC3339)),
		}
		for _, line := range events {
			ev, err := schema.DecodeEvent("test", []byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if err := pub.Publish(ctx, &ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"ponens.notify.agent":         {"r1 commit_read coder-7 payments info", "r1 commit_tested coder-7 payments error"},
		"ponens.notify.project":       {"r1 commit_read coder-7 payments info", "r1 commit_tested coder-7 payments error"},
		"ponens.notify.severe":        {"r1 commit_tested coder-7 payments error", "r2 commit_tested coder-8 web error"},
		"ponens.alerts.commit_read":   {"r1 commit_read coder-7 payments info", "r2 commit_read coder-8 web info"},
		"ponens.alerts.commit_tested": {"r1 commit_tested coder-7 payments error", "r2 commit_tested coder-8 web error"},
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, v := range got {
			n += len(v)
		}
		mu.Unlock()
		if n >= 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // an alert sent twice, or to the wrong subscription, arrives by now
	mu.Lock()
	defer mu.Unlock()
	for subj, w := range want {
		g := append([]string(nil), got[subj]...)
		sort.Strings(g)
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s: got %q, want %q", subj, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("alerts on %d subjects, want %d: %v", len(got), len(want), got)
	}
}
