package gcpause

import (
	"runtime/debug"
	"sync"
	"testing"
)

// gcPercent reads the collector's setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func TestHoldTurnsCollectionOffUntilTheLastRelease(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	a := Hold()
	b := Hold()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent while held: %d, want -1 (off)", p)
	}
	a()
	a() // a second release of the same hold changes nothing
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent with one hold left: %d, want -1 (off)", p)
	}
	b()
	if p := gcPercent(); p != 150 {
		t.Fatalf("GC percent after the last release: %d, want the 150 set before", p)
	}
}

func TestHoldFromManyGoroutinesRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(120))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 100 {
				Hold()()
			}
		})
	}
	wg.Wait()
	if p := gcPercent(); p != 120 {
		t.Fatalf("GC percent after overlapping holds: %d, want 120", p)
	}
}
