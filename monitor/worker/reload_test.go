package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/monitor/remote"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// processed reports whether every partition's consumer has delivered and
// seen acked everything stored for it.
func processed(js natsjs.JetStream) bool {
	ctx := context.Background()
	for k := range testPartitions {
		c, err := js.Consumer(ctx, schema.StreamEvents, fmt.Sprintf("%s-p%d", subjects.Prefix, k))
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		if err != nil || info.NumPending > 0 || info.NumAckPending > 0 {
			return false
		}
	}
	return true
}

// byRule is verdict streams keyed by run and rule id, in order.
type byRule map[[2]string][]string

func (b byRule) add(vs []schema.VerdictEvent) {
	for _, v := range vs {
		k := [2]string{v.RunID, v.Rule.ID}
		b[k] = append(b[k], line(v))
	}
}

// local runs set over the events of each run with a local monitor.
func local(t *testing.T, set *ruleset.Set, runs [][]schema.Event) byRule {
	t.Helper()
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	out := byRule{}
	for _, evs := range runs {
		run := eng.NewRun(evs[0].RunID)
		for i := range evs {
			vs, err := run.Add(&evs[i])
			if err != nil {
				t.Fatal(err)
			}
			out.add(vs)
		}
	}
	return out
}

// withRule returns set with one more rule, so that a reload to it restarts
// every partition (a reload to the same rules restarts none).
func withRule(t *testing.T, set *ruleset.Set, id, formula string) *ruleset.Set {
	t.Helper()
	r, probs := ruleset.FromFormula(id, formula)
	if probs != nil {
		t.Fatal(probs)
	}
	out := *set
	out.Rules = append(slices.Clone(set.Rules), r)
	return &out
}

// TestReload: a worker processes half of every run under one rule set,
// reloads a set in which one rule changed meaning, one is new and one is
// gone, and processes the rest. The open runs keep their state (the rules
// that did not change give exactly the verdicts of an uninterrupted run);
// the changed rule's verdicts continue under a new manifest version whose
// stream, like the new rule's, covers every open run from its start; the
// old version's and the removed rule's verdicts stop at the reload; nothing
// is stored twice.
func TestReload(t *testing.T) {
	nc, js := startJS(t)
	before := rules(t)
	const changed, removed, added = "no_secret_edits", "tests_before_commit", "no_deploy_without_tests"

	after := &ruleset.Set{Enforce: before.Enforce, Opts: before.Opts, Policies: before.Policies}
	for _, r := range before.Rules {
		switch r.ID {
		case removed:
			continue
		case changed: // a different meaning under the same id
			c, probs := ruleset.FromFormula(changed, "G(EditFile → P(ReadFile))")
			if probs != nil {
				t.Fatal(probs)
			}
			r = c
		}
		after.Rules = append(after.Rules, r)
	}
	n, probs := ruleset.FromFormula(added, "G(Deploy → P(RunTests))")
	if probs != nil {
		t.Fatal(probs)
	}
	after.Rules = append(after.Rules, n)

	runs, _, _ := fleet(30)
	var firstHalf, secondHalf [][]schema.Event
	for _, evs := range runs {
		if len(evs) < 2 {
			continue
		}
		h := len(evs) / 2
		firstHalf, secondHalf = append(firstHalf, evs[:h]), append(secondHalf, evs)
	}

	opts := Options{ID: "w", Subjects: subjects, Rules: before, LeaseTTL: time.Second, Logger: quiet,
		CheckpointEvery: 50 * time.Millisecond, IdleAfter: time.Minute, GapTimeout: time.Minute, DeadLetter: deadLetters(js)}
	w, err := New(nc, js, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	for _, evs := range firstHalf {
		for i := range evs {
			publish(t, js, &evs[i], schema.EventMsgID(evs[i].RunID, evs[i].Seq))
		}
	}
	waitFor(t, 20*time.Second, "the first half processed", func() bool { return len(w.Owned()) == testPartitions && processed(js) })

	changes, err := w.Reload(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, c := range changes {
		kinds[c.ID] = c.Kind + " " + c.VerdictID
	}
	if kinds[changed] != "changed "+changed+"@2" || kinds[added] != "added "+added || kinds["research_before_edit"] != "unchanged research_before_edit" {
		t.Fatalf("changes: %v", kinds)
	}
	if kinds[removed] != "removed " || len(kinds) != len(after.Rules)+1 {
		t.Fatalf("changes: %v; want every rule in force and the removed one", kinds)
	}

	for i, evs := range secondHalf {
		for j := len(firstHalf[i]); j < len(evs); j++ {
			publish(t, js, &evs[j], schema.EventMsgID(evs[j].RunID, evs[j].Seq))
		}
	}
	waitFor(t, 20*time.Second, "the second half processed", func() bool { return processed(js) })
	cancel()
	<-done

	// What the verdicts stream must hold, per run and rule.
	want := byRule{}
	oldPrefix := local(t, before, firstHalf)
	oldWhole := local(t, before, secondHalf)
	newWhole := local(t, after.Renamed(map[string]string{changed: changed + "@2"}), secondHalf)
	for k, v := range oldWhole {
		switch k[1] {
		case changed, removed:
			if p := oldPrefix[k]; len(p) > 0 {
				want[k] = p
			}
		default:
			want[k] = v
		}
	}
	for k, v := range newWhole {
		if k[1] == changed+"@2" || k[1] == added {
			want[k] = v
		}
	}
	got := byRule{}
	c, err := js.OrderedConsumer(context.Background(), schema.StreamVerdicts, natsjs.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range verdictCount(js) {
		m, err := c.Next(natsjs.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var v schema.VerdictEvent
		if err := json.Unmarshal(m.Data(), &v); err != nil {
			t.Fatal(err)
		}
		got.add([]schema.VerdictEvent{v})
		wantRule := ""
		if v.Rule.ID == changed+"@2" {
			wantRule = changed // so that its alerts stay on the rule's subject
		}
		if h := m.Headers().Get(schema.HeaderRule); h != wantRule {
			t.Errorf("verdict of %s: %s header %q, want %q", v.Rule.ID, schema.HeaderRule, h, wantRule)
		}
	}
	counts := map[string]int{}
	for k, v := range want {
		counts[k[1]] += len(v)
		if !slices.Equal(got[k], v) {
			t.Errorf("run %s, rule %s: verdicts differ\n got %v\nwant %v", k[0], k[1], got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("run %s, rule %s: unexpected verdicts %v", k[0], k[1], v)
		}
	}
	for _, id := range []string{changed, changed + "@2", added, removed} {
		if counts[id] == 0 {
			t.Errorf("the load gives rule %s no verdicts: the test proves nothing about it", id)
		}
	}
	t.Logf("verdicts per rule: %v", counts)

	hist, err := Manifest(context.Background(), js, subjects.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if h.ID == changed && (len(h.Versions) != 2 || h.Versions[1].VerdictID != changed+"@2" || h.Versions[0].Meaning == h.Versions[1].Meaning) {
			t.Errorf("manifest of %s: %+v", changed, h)
		}
	}
	if len(hist) != len(before.Rules)+1 {
		t.Errorf("manifest has %d rules, want %d (every rule ever in force)", len(hist), len(before.Rules)+1)
	}
}

// TestReloadRefusesWhatCannotRun: a rule set that loads but that the
// monitor cannot evaluate (a future operator under a past one) is refused,
// by New and by Reload, and the rules in force stay in force.
func TestReloadRefusesWhatCannotRun(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	bad, probs := ruleset.FromFormula("bad", "G(GitCommit → P(F RunTests))")
	if probs != nil {
		t.Fatal(probs)
	}
	next := &ruleset.Set{Enforce: set.Enforce, Opts: set.Opts, Policies: set.Policies, Rules: append(slices.Clone(set.Rules), bad)}
	if _, err := New(nc, js, Options{ID: "x", Subjects: subjects, Rules: next}); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Errorf("New with a rule it cannot evaluate: %v", err)
	}
	w, cancel, done := startWorker(t, nc, js, "w", set, func(*Worker) {})
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "every partition", func() bool { return len(w.Owned()) == testPartitions })
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if _, err := w.Reload(ctx, next); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("Reload with a rule it cannot evaluate: %v", err)
	}
	time.Sleep(time.Second) // a few balance rounds
	if got := w.Owned(); len(got) != testPartitions {
		t.Errorf("after the refused reload the worker owns %v", got)
	}
	if rules, _ := w.currentRules(); len(rules.Rules) != len(set.Rules) {
		t.Errorf("%d rules in force after the refused reload, want the %d from before", len(rules.Rules), len(set.Rules))
	}
}

// TestReloadAfterSkippedGap: a run gave up waiting for a missing seq; a
// reload (a restart of every partition) must replay the run as it was
// processed: the events after the gap stay applied, and the gap is not
// reported again.
func TestReloadAfterSkippedGap(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ev := func(seq uint64, typ schema.EventType, a *schema.Action) *schema.Event {
		return runEvent("g", seq, typ, a)
	}
	publish(t, js, ev(1, schema.TypeRunStart, nil), "g1")
	publish(t, js, ev(2, schema.TypeAction, &schema.Action{ID: 1, Type: "ReadFile"}), "g2")
	publish(t, js, ev(4, schema.TypeAction, &schema.Action{ID: 3, Type: "RunTests", Status: "completed"}), "g4") // seq 3 never comes
	w, cancel, done := startWorker(t, nc, js, "w", set, func(w *Worker) { w.opts.IdleAfter = time.Minute })
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "the gap given up on", func() bool { return len(storedDeadLetters(js)) == 1 })
	time.Sleep(300 * time.Millisecond) // a checkpoint after the skip, with no event since
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if _, err := w.Reload(ctx, withRule(t, set, "eventually_tests", "F(RunTests)")); err != nil {
		t.Fatal(err)
	}
	publish(t, js, ev(5, schema.TypeAction, &schema.Action{ID: 4, Type: "GitCommit"}), "g5")
	waitFor(t, 10*time.Second, "seq 5 processed", func() bool { return processed(js) })
	time.Sleep(500 * time.Millisecond) // a second skip would show up now
	if n := len(storedDeadLetters(js)); n != 1 {
		t.Errorf("%d dead letters, want the one for the gap", n)
	}
	all, _ := stored(t, js)
	integrity := 0
	for _, l := range all["g"] {
		if strings.Contains(l, `"tests_before_commit"`) && strings.Contains(l, `"violated"`) {
			t.Errorf("the commit after the completed tests of seq 4 is judged a violation: the restart lost seq 4\n%s", l)
		}
		if strings.Contains(l, StreamIntegrity) {
			integrity++
		}
	}
	if integrity != 1 {
		t.Errorf("%d %s verdicts, want 1: %v", integrity, StreamIntegrity, all["g"])
	}
}

// TestDecideAcrossReload: decisions asked while a reload rebuilds the runs
// are never taken from a half-rebuilt run: the client is told to retry and
// gets the answer the whole run gives.
func TestDecideAcrossReload(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	publish(t, js, &schema.Event{V: 1, RunID: "d", Seq: 1, TS: ts, Type: schema.TypeRunStart, Start: &schema.RunStart{}}, "d1")
	const reads = 3000 // a replay long enough to be asked in the middle of
	for i := range reads {
		publish(t, js, &schema.Event{V: 1, RunID: "d", Seq: uint64(i + 2), TS: ts, Type: schema.TypeAction,
			Action: &schema.Action{ID: int64(i + 1), Type: "ReadFile"}}, fmt.Sprintf("d%d", i+2))
	}
	publish(t, js, &schema.Event{V: 1, RunID: "d", Seq: reads + 2, TS: ts, Type: schema.TypeAction,
		Action: &schema.Action{ID: reads + 1, Type: "RunTests", Status: "completed"}}, "dlast")
	w, cancel, done := startWorker(t, nc, js, "w", set, func(w *Worker) { w.opts.IdleAfter = time.Minute })
	defer func() { cancel(); <-done }()
	waitFor(t, 20*time.Second, "the run processed", func() bool { return len(w.Owned()) == testPartitions && processed(js) })
	commit := schema.Action{ID: reads + 2, Type: "GitCommit"}
	ask := func() (monitor.Decision, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return remote.Decide(ctx, nc, subjects, "d", &commit)
	}
	if d, err := ask(); err != nil || d.Decision != "allow" {
		t.Fatalf("before the reload: %+v, %v", d, err)
	}
	reloaded := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := w.Reload(ctx, withRule(t, set, "eventually_tests", "F(RunTests)"))
		reloaded <- err
	}()
	asked := 0
	for {
		d, err := ask()
		asked++
		if err != nil || d.Decision != "allow" {
			t.Fatalf("answer %d during the reload: %+v, %v (a half-rebuilt run answered)", asked, d, err)
		}
		select {
		case err := <-reloaded:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d decisions asked during the reload", asked)
			return
		default:
		}
	}
}

// TestReloadSameRules: reloading the rules in force (a file saved
// unchanged) restarts no partition.
func TestReloadSameRules(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	w, cancel, done := startWorker(t, nc, js, "w", set, func(*Worker) {})
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "every partition", func() bool { return len(w.Owned()) == testPartitions })
	partitions := func() map[int]*partition {
		w.mu.Lock()
		defer w.mu.Unlock()
		return maps.Clone(w.owned)
	}
	before := partitions()
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	again, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	again.Enforce = true
	changes, err := w.Reload(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.Kind != "unchanged" {
			t.Errorf("change %+v", c)
		}
	}
	if after := partitions(); !maps.Equal(before, after) {
		t.Error("reloading the same rules restarted partitions")
	}
	if _, err := w.Reload(ctx, withRule(t, again, "eventually_tests", "F(RunTests)")); err != nil {
		t.Fatal(err)
	}
	for k, p := range partitions() {
		if before[k] == p {
			t.Errorf("partition %d not restarted for a new rule", k)
		}
	}
}

// TestReloadPutsBackARemovedRule: a rule removed by a reload and put back by
// a later one gets a new version, even with the same meaning, so its
// verdicts start afresh instead of repeating what it said before.
func TestReloadPutsBackARemovedRule(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	w, cancel, done := startWorker(t, nc, js, "w", set, func(*Worker) {})
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "every partition", func() bool { return len(w.Owned()) == testPartitions })
	without := *set
	without.Rules = slices.DeleteFunc(slices.Clone(set.Rules), func(r *ruleset.Rule) bool { return r.ID == "tests_before_commit" })
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	if _, err := w.Reload(ctx, &without); err != nil {
		t.Fatal(err)
	}
	changes, err := w.Reload(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.ID == "tests_before_commit" && (c.Kind != "added" || c.VerdictID != "tests_before_commit@2") {
			t.Errorf("the rule put back: %+v", c)
		}
	}
	hist, err := Manifest(ctx, js, subjects.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if h.ID == "tests_before_commit" && (len(h.Versions) != 2 || h.Versions[0].Removed == nil || h.Versions[1].Removed != nil) {
			t.Errorf("manifest of the rule put back: %+v", h)
		}
	}
}
