package sink_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

// Ended is told every run whose closing event the sink stored, after that
// event's commit (the run's events are all in the store when it is
// called); when it fails, the batch comes again and so does the call.
func TestSinkEnded(t *testing.T) {
	js := startStreams(t)
	const runs, steps = 4, 3
	events, verdicts := publishRuns(t, js, "sk-ended", runs, steps)
	var (
		mu     sync.Mutex
		calls  int
		ended  []string
		stored = map[string]string{} // run → its events in the store when it was reported
	)
	hook := func(_ context.Context, rs []string) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		for _, r := range rs {
			stored[r] = query(t, fmt.Sprintf("SELECT count() FROM events FINAL WHERE run_id = '%s'", r))
		}
		if calls == 1 {
			return fmt.Errorf("the first call fails")
		}
		ended = append(ended, rs...)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	stats := new(sink.Stats)
	done := make(chan error, 1)
	go func() {
		done <- sink.FromStreams(ctx, js, subjects, chdb.NewStore(engine), sink.Options{BatchRows: 4, FlushEvery: 50 * time.Millisecond,
			RetryAfter: 10 * time.Millisecond, Stats: stats, Ended: hook, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(ended)
		mu.Unlock()
		if n >= runs && stats.Rows.Load() >= uint64(events+verdicts) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(ended)
	want := []string{"sk-ended-0", "sk-ended-1", "sk-ended-2", "sk-ended-3"}
	if !slices.Equal(slices.Compact(ended), want) {
		t.Errorf("ended runs %v, want %v", ended, want)
	}
	if calls < 2 || stats.Retries.Load() == 0 {
		t.Errorf("%d calls, %d retries: the failed call's batch did not come again", calls, stats.Retries.Load())
	}
	for _, r := range want {
		if stored[r] != fmt.Sprint(steps+2) {
			t.Errorf("run %s was reported with %s of its %d events stored", r, stored[r], steps+2)
		}
	}
}
