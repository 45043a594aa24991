package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestIdleEndVerdictSurvivesDedup: a run that ends by idling out gets its
// end-of-run verdict at the seq of its last event, the seq its pending
// verdict already carries. With idle_after well inside the verdicts'
// duplicate window both must be stored: message ids tell transitions apart.
func TestIdleEndVerdictSurvivesDedup(t *testing.T) {
	nc, js := startJS(t) // verdict duplicate window: 10 minutes
	set := &ruleset.Set{}
	r, probs := ruleset.FromFormula("eventually-tests", "F(RunTests)")
	if probs != nil {
		t.Fatal(probs)
	}
	if probs := set.Add(r); probs != nil {
		t.Fatal(probs)
	}
	evs := []schema.Event{*runEvent("idle-run", 1, schema.TypeRunStart, nil),
		*runEvent("idle-run", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "GitCommit", Status: "completed"})}
	want := expected(t, set, [][]schema.Event{evs})
	if len(want["idle-run"]) != 2 {
		t.Fatalf("the offline monitor gives %d verdicts, the test needs a pending one and an end-of-run one: %v", len(want["idle-run"]), want)
	}
	for i := range evs {
		publish(t, js, &evs[i], schema.EventMsgID(evs[i].RunID, evs[i].Seq))
	}
	_, cancel, done := startWorker(t, nc, js, "w1", set, func(*Worker) {}) // idle_after 2s
	waitFor(t, 20*time.Second, "the pending verdict", func() bool { return verdictCount(js) >= 1 })
	// The run idles out; its end-of-run verdict is the second one stored.
	deadline := time.Now().Add(5 * time.Second)
	for verdictCount(js) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	got, n := stored(t, js)
	sameVerdicts(t, got, n, want)
	if n == 2 && !strings.Contains(got["idle-run"][1], `"unresolved"`) {
		t.Errorf("end-of-run verdict is %s, want unresolved", got["idle-run"][1])
	}
}

// TestConflictingDuplicateDeadLettered: an event reaching the worker again
// (under another message id, as after the duplicate window) with the seq
// of an applied or a waiting event but other bytes is dead-lettered as
// conflicting-duplicate; the same bytes again are dropped silently.
func TestConflictingDuplicateDeadLettered(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	start := runEvent("dup-run", 1, schema.TypeRunStart, nil)
	read := runEvent("dup-run", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "ReadFile", Status: "completed"})
	edit := runEvent("dup-run", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "EditFile", Status: "completed"})
	early := runEvent("dup-run", 5, schema.TypeAction, &schema.Action{ID: 4, Type: "ReadFile", Status: "completed"})
	earlyOther := runEvent("dup-run", 5, schema.TypeAction, &schema.Action{ID: 4, Type: "GitCommit", Status: "completed"})
	publish(t, js, start, "a:1")
	publish(t, js, read, "a:2")
	publish(t, js, early, "a:5") // waits for 3 and 4
	publish(t, js, read, "b:2")  // the same bytes: a repeat
	publish(t, js, edit, "c:2")  // other bytes under an applied seq
	publish(t, js, earlyOther, "c:5")
	_, cancel, done := startWorker(t, nc, js, "w1", set, func(w *Worker) { w.opts.IdleAfter, w.opts.GapTimeout = time.Minute, time.Minute })
	var got []string
	waitFor(t, 20*time.Second, "two dead letters", func() bool { got = storedDeadLetters(js); return len(got) >= 2 })
	time.Sleep(300 * time.Millisecond) // a third would show up now
	cancel()
	<-done
	got = storedDeadLetters(js)
	if len(got) != 2 || !strings.HasPrefix(got[0], `conflicting-duplicate: runId "dup-run", seq 2: conflicting duplicate: the run applied other content`) ||
		!strings.HasPrefix(got[1], `conflicting-duplicate: runId "dup-run", seq 5: conflicting duplicate: other content under this seq waits`) {
		t.Errorf("dead letters %q", got)
	}
}

// TestExpiredHistoryNotJudged: an open run whose first events the stream
// removed (nats.max_age) before a takeover could replay them is ended, and
// its later events go to the dead letters, rather than being judged on
// part of its history.
func TestExpiredHistoryNotJudged(t *testing.T) {
	_, nc, js := jstest.Start(t)
	cfg := transport.StreamConfig{Prefix: subjects.Prefix, Partitions: testPartitions, Duplicates: 500 * time.Millisecond, MaxAge: time.Second}
	if err := transport.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	set := rules(t)
	publish(t, js, runEvent("old-run", 1, schema.TypeRunStart, nil), "old:1")
	_, cancel, done := startWorker(t, nc, js, "w1", set, func(w *Worker) { w.opts.IdleAfter = time.Minute })
	consumer := fmt.Sprintf("%s-p%d", subjects.Prefix, subjects.PartitionOf("old-run"))
	waitFor(t, 20*time.Second, "the run checkpointed", func() bool {
		c, err := js.Consumer(context.Background(), schema.StreamEvents, consumer)
		return err == nil && c.CachedInfo().AckFloor.Stream >= 1
	})
	cancel()
	<-done
	waitFor(t, 20*time.Second, "the run's first event expired", func() bool {
		st, err := js.Stream(context.Background(), schema.StreamEvents)
		return err == nil && st.CachedInfo().State.Msgs == 0
	})
	w2, cancel, done := startWorker(t, nc, js, "w2", set, func(w *Worker) { w.opts.IdleAfter = time.Minute })
	// Published once w2 owns the partitions, so that it does not expire too before w2 reads it.
	waitFor(t, 20*time.Second, "w2 to own the partitions", func() bool { return len(w2.Owned()) == testPartitions })
	publish(t, js, runEvent("old-run", 2, schema.TypeAction, &schema.Action{ID: 1, Type: "GitCommit", Status: "completed"}), "old:2")
	waitFor(t, 20*time.Second, "a dead letter", func() bool { return len(storedDeadLetters(js)) >= 1 })
	cancel()
	<-done
	dl := storedDeadLetters(js)
	if len(dl) != 1 || !strings.HasPrefix(dl[0], `after-end: runId "old-run", seq 2: the run has ended`) {
		t.Errorf("dead letters %q", dl)
	}
	got, _ := stored(t, js)
	for _, v := range got["old-run"] {
		if strings.Contains(v, `"seq":2`) {
			t.Errorf("seq 2 judged on part of the run: %s", v)
		}
	}
}
