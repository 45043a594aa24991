package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
)

// TestReloadAfterOverflow: the out-of-order buffer of a run overflows while
// a gap waits, two gaps are given up on, then a reload replays the run: it
// must restore the run as it was, reporting no gap again (replay skips the
// given-up seqs and does not apply the buffer bound, which only the live run
// had to).
func TestReloadAfterOverflow(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ev := func(seq uint64) *schema.Event {
		if seq == 1 {
			return runEvent("m", 1, schema.TypeRunStart, nil)
		}
		return runEvent("m", seq, schema.TypeAction, &schema.Action{ID: int64(seq), Type: "ReadFile"})
	}
	for _, s := range []uint64{1, 3, 4, 6} { // 6 overflows (MaxBuffered 2) while 2 is missing
		publish(t, js, ev(s), "m"+string(rune('0'+s)))
	}
	w, cancel, done := startWorker(t, nc, js, "w", set, func(w *Worker) { w.opts.IdleAfter = time.Minute; w.opts.MaxBuffered = 2 })
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "gap 2 skipped", func() bool { return len(storedDeadLetters(js)) == 2 })
	for _, s := range []uint64{7, 8, 5} {
		publish(t, js, ev(s), "m"+string(rune('0'+s)))
	}
	waitFor(t, 10*time.Second, "gap 6 skipped", func() bool { return len(storedDeadLetters(js)) == 3 })
	time.Sleep(300 * time.Millisecond)
	before := storedDeadLetters(js)
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if _, err := w.Reload(ctx, withRule(t, set, "eventually_tests", "F(RunTests)")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	publish(t, js, ev(9), "m9")
	time.Sleep(time.Second)
	after := storedDeadLetters(js)
	all, _ := stored(t, js)
	integrity := 0
	for _, l := range all["m"] {
		if strings.Contains(l, StreamIntegrity) {
			integrity++
		}
	}
	t.Logf("dead letters before reload:\n  %s", strings.Join(before, "\n  "))
	t.Logf("dead letters after reload:\n  %s", strings.Join(after, "\n  "))
	t.Logf("%d stream_integrity verdicts (2 before the reload)", integrity)
	if len(after) != len(before) || integrity != 2 {
		t.Errorf("the reload changed the run: %d dead letters (was %d), %d integrity verdicts (was 2)", len(after), len(before), integrity)
	}
}

// TestReloadAfterOverflowClosedGap: an event refused on overflow, and then
// the gap before it closed; a reload must refuse it again rather than hold
// it (replay has no buffer bound), so the run goes on exactly as it would
// have: waiting for the refused seq, not for an invented one.
func TestReloadAfterOverflowClosedGap(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ev := func(seq uint64) *schema.Event {
		if seq == 1 {
			return runEvent("o", 1, schema.TypeRunStart, nil)
		}
		return runEvent("o", seq, schema.TypeAction, &schema.Action{ID: int64(seq), Type: "ReadFile"})
	}
	for _, s := range []uint64{1, 3, 4, 6, 2} { // 6 overflows (MaxBuffered 2) while 2 is missing; 2 then closes the gap
		publish(t, js, ev(s), "o"+string(rune('0'+s)))
	}
	w, cancel, done := startWorker(t, nc, js, "w", set, func(w *Worker) { w.opts.IdleAfter = time.Minute; w.opts.MaxBuffered = 2 })
	defer func() { cancel(); <-done }()
	waitFor(t, 10*time.Second, "the overflow", func() bool {
		return len(w.Owned()) == testPartitions && processed(js) && len(storedDeadLetters(js)) == 1
	})
	time.Sleep(200 * time.Millisecond) // a checkpoint
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if _, err := w.Reload(ctx, withRule(t, set, "eventually_tests", "F(RunTests)")); err != nil {
		t.Fatal(err)
	}
	publish(t, js, ev(5), "o5")
	publish(t, js, ev(7), "o7")
	waitFor(t, 10*time.Second, "the gap at 6 given up on", func() bool { return len(storedDeadLetters(js)) >= 2 })
	time.Sleep(500 * time.Millisecond)
	got := storedDeadLetters(js)
	if len(got) != 2 || !strings.Contains(got[1], "seq 6 to 6 never arrived") {
		t.Errorf("dead letters %q; want the overflow of 6, then the gap at 6", got)
	}
}
