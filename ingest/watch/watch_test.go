package watch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// recorder publishes to JetStream and remembers every event it was asked
// to publish, so that the test sees a second publish even though the
// stream would drop it as a duplicate.
type recorder struct {
	pub *transport.Publisher
	mu  sync.Mutex
	got []uint64
}

func (r *recorder) publish(ctx context.Context, evs []schema.Event) error {
	ptrs := make([]*schema.Event, len(evs))
	for i := range evs {
		ptrs[i] = &evs[i]
	}
	for _, err := range r.pub.PublishBatch(ctx, ptrs) {
		if err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range evs {
		r.got = append(r.got, ev.Seq)
	}
	return nil
}

func (r *recorder) seqs() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// checkFor polls cond until it holds or the time is up.
func checkFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLiveTranscriptAcrossRestart: a Claude Code transcript written line
// by line while the watcher runs is published event by event, each once
// and in order, across a restart of the watcher halfway (and a line
// written half at a time).
func TestLiveTranscriptAcrossRestart(t *testing.T) {
	_, _, js := jstest.Start(t)
	streams := transport.StreamConfig{Prefix: "ponens", Partitions: 1}
	if err := transport.Provision(context.Background(), js, streams); err != nil {
		t.Fatal(err)
	}
	pub := transport.NewPublisher(js, streams.Subjects(), transport.PublisherOptions{Retries: -1, Timeout: 2 * time.Second})
	t.Cleanup(func() { pub.Close() })
	rec := &recorder{pub: pub}

	src, err := os.ReadFile("../../examples/imports/claude-code.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(src), "\n"), "\n")
	want, _, err := claudecode.Import(strings.NewReader(string(src)), "x", mapping.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "-home-dev-shop", "7f3c2a10.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := Options{
		Dir:      dir,
		New:      func(p string) Importer { return claudecode.NewImporter(mapping.Default(), p) },
		Publish:  rec.publish,
		State:    filepath.Join(t.TempDir(), "state.json"),
		Interval: 10 * time.Millisecond,
	}
	start := func() context.CancelFunc {
		w, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	stop := start()
	for i, l := range lines {
		if i == len(lines)/2 {
			stop()
			stop = start()
		}
		if i == 5 { // half a line, then the rest
			f.WriteString(l[:len(l)/2])
			time.Sleep(30 * time.Millisecond)
			f.WriteString(l[len(l)/2:])
		} else {
			f.WriteString(l)
		}
		// The events this line completes are published before the next.
		n := countUpTo(lines, i+1)
		checkFor(t, 10*time.Second, func() bool { return len(rec.seqs()) >= n })
	}
	stop()
	got := rec.seqs()
	// Each event once, in order: seq 1..n, the last events the tool calls
	// that completed (none left waiting: every call got its result).
	for i, s := range got {
		if s != uint64(i+1) {
			t.Fatalf("published seqs %v: want 1..%d, each once", got, len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("published %d events, want %d", len(got), len(want))
	}
	msgs := jstest.Messages(t, js, schema.StreamEvents)
	if len(msgs) != len(want) {
		t.Errorf("stream holds %d events, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		var ev schema.Event
		json.Unmarshal(m.Data(), &ev)
		if ev.Seq != uint64(i+1) || ev.Type != want[i].Type {
			t.Errorf("stored event %d: seq %d %s, want %d %s", i, ev.Seq, ev.Type, i+1, want[i].Type)
		}
	}
}

// countUpTo is how many events the first n lines of the transcript make
// as they are read (calls waiting for their result make none yet).
func countUpTo(lines []string, n int) int {
	im := claudecode.NewImporter(mapping.Default(), "x")
	count := 0
	for i, l := range lines[:n] {
		evs, _ := im.Line(i+1, []byte(strings.TrimSuffix(l, "\n")))
		count += len(evs)
	}
	return count
}
