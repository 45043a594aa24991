package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
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
	_, cancel, done := startWorker(t, nc, js, "w1", set, func(*Worker) {}) // idle_after 400ms
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
