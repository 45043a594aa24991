package gcpause

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
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

// memoryLimit reads the soft memory limit without changing it.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// waitRestored waits for the collection watch's cleanup, which runs on a
// goroutine of the runtime after a collection, to restore the collector.
func waitRestored(t *testing.T, wantPercent int, wantLimit int64) {
	t.Helper()
	for range 1000 {
		if gcPercent() == wantPercent && memoryLimit() == wantLimit {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("after a collection: GC percent %d, memory limit %d; want %d and %d restored", gcPercent(), memoryLimit(), wantPercent, wantLimit)
}

func TestHoldUntilDoubledSetsALimitAndReleaseRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(130))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64)) // whatever GOMEMLIMIT says
	before := memoryLimit()
	inUse := memoryInUse()
	release := HoldUntilDoubled()
	defer release()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent while held: %d, want -1 (off)", p)
	}
	if l := memoryLimit(); l < 2*inUse || l > 3*inUse {
		t.Fatalf("memory limit while held: %d, want about twice the %d in use", l, inUse)
	}
	release()
	release()
	if p, l := gcPercent(), memoryLimit(); p != 130 || l != before {
		t.Fatalf("after release: GC percent %d, memory limit %d; want 130 and %d", p, l, before)
	}
}

func TestHoldUntilDoubledNeverRaisesTheLimit(t *testing.T) {
	low := memoryInUse() + 1<<20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(low))
	release := HoldUntilDoubled()
	defer release()
	if l := memoryLimit(); l != low {
		t.Fatalf("memory limit while held: %d, want the lower %d already set", l, low)
	}
}

func TestHoldUntilDoubledEndsAtACollection(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(110))
	before := memoryLimit()
	a, b := HoldUntilDoubled(), HoldUntilDoubled()
	plain := Hold()
	defer a()
	defer b()
	defer plain()
	runtime.GC()
	runtime.GC() // the watch's object, allocated during no cycle, is found by either
	time.Sleep(time.Millisecond)
	for range 1000 {
		if memoryLimit() == before {
			break
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if l := memoryLimit(); l != before {
		t.Fatalf("memory limit after collections: %d, want %d restored", l, before)
	}
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent with a plain Hold left: %d, want -1 (off)", p)
	}
	a()
	b() // ended by the collection already: changes nothing
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent after releasing ended holds: %d, want -1 (off): the plain Hold lasts", p)
	}
	plain()
	waitRestored(t, 110, before)
}

func TestHoldUntilDoubledKeepsGOGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	release := HoldUntilDoubled()
	defer release()
	if l := memoryLimit(); l != math.MaxInt64 {
		t.Fatalf("memory limit while held with collection off already: %d, want none (%d)", l, int64(math.MaxInt64))
	}
	release()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent after release: %d, want -1 (off) as before", p)
	}
}

// sink keeps allocations from being optimised away.
var sink [][]byte

func TestHoldUntilDoubledCollectsWhenMemoryDoubles(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	before := memoryLimit()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cycles := ms.NumGC
	release := HoldUntilDoubled()
	defer release()
	inUse := memoryInUse()
	for i := int64(0); i < 4*inUse; i += 1 << 16 {
		sink = append(sink[:0], make([]byte, 1<<16)) // garbage, all but the last
	}
	sink = nil
	waitRestored(t, 100, before)
	runtime.ReadMemStats(&ms)
	if ms.NumGC == cycles {
		t.Fatalf("no collection while allocating four times the %d bytes in use under the hold", inUse)
	}
}

func TestTightenLowersUntilTheLastRelease(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	a := Tighten(50)
	if p := gcPercent(); p != 50 {
		t.Fatalf("GC percent tightened to 50: %d", p)
	}
	b := Tighten(25)
	c := Tighten(400) // never raises it
	if p := gcPercent(); p != 25 {
		t.Fatalf("GC percent tightened to 50, 25 and 400: %d, want the lowest", p)
	}
	b()
	b()
	if p := gcPercent(); p != 50 {
		t.Fatalf("GC percent with 50 and 400 left: %d, want 50", p)
	}
	a()
	if p := gcPercent(); p != 150 {
		t.Fatalf("GC percent with 400 left: %d, want the 150 set before (never raised)", p)
	}
	c()
	if p := gcPercent(); p != 150 {
		t.Fatalf("GC percent after the last release: %d, want 150", p)
	}
}

func TestHoldWinsOverTighten(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tightened := Tighten(25)
	held := Hold()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent held and tightened: %d, want -1 (off)", p)
	}
	held()
	if p := gcPercent(); p != 25 {
		t.Fatalf("GC percent once the hold ends: %d, want the tightening's 25", p)
	}
	held = Hold()
	tightened()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent after the tightening ends during a hold: %d, want -1", p)
	}
	held()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent after both: %d, want the 100 set before", p)
	}
}

func TestTightenKeepsGOGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	release := Tighten(25)
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent tightened with collection off by the process: %d, want -1", p)
	}
	release()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent after: %d, want -1", p)
	}
}
