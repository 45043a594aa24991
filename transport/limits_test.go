package transport_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// syncBuf is a bytes.Buffer safe for a logger and a test at once.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLimitAlarm: a stream at the alarm fraction of its bound is logged at
// warn once, and the publisher then gets ErrStreamFull at the bound, the
// events stored before staying.
func TestLimitAlarm(t *testing.T) {
	_, _, js := jstest.Start(t)
	cfg := testStreams
	cfg.Events = transport.Limits{MaxMsgs: 10}
	provision(t, js, cfg)
	p := transport.NewPublisher(js, cfg.Subjects(), transport.PublisherOptions{})
	for seq := uint64(1); seq <= 8; seq++ {
		if err := p.Publish(ctxT(t), event("alarm", seq)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var log syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var observed atomic.Pointer[[]transport.StreamUsage]
	go func() {
		done <- transport.WatchLimits(ctx, js, 0.8, 10*time.Millisecond, slog.New(slog.NewTextHandler(&log, nil)),
			func(us []transport.StreamUsage) { observed.Store(&us) })
	}()
	waitFor(t, "the alarm", func() bool { return strings.Contains(log.String(), "stream near its limit") })
	time.Sleep(50 * time.Millisecond) // more checks: still one warning
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), "stream=EVENTS used=80%") {
		t.Errorf("%d warnings:\n%s", n, log.String())
	}
	if us := observed.Load(); us == nil || len(*us) != 3 || !(*us)[0].Alarm || (*us)[0].Msgs != 8 {
		t.Errorf("readings handed to observe: %+v, want the three streams with EVENTS in alarm", us)
	}
	errs := p.PublishBatch(ctxT(t), []*schema.Event{event("alarm", 9), event("alarm", 10), event("alarm", 11)})
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], transport.ErrStreamFull) {
		t.Errorf("at the bound: %v", errs)
	}
	if n := streamMsgs(t, js, "EVENTS"); n != 10 {
		t.Errorf("%d events stored, want 10", n)
	}
}
