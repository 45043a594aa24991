// Package gcpause holds the garbage collector off while the process does
// work that keeps nearly everything it allocates, such as decoding a file
// whose values all stay in memory: collecting during it finds little to
// free, and marking a heap that keeps growing costs more than the work
// itself.
//
// Hold turns collection off outright. HoldUntilDoubled is the hold for the
// work after such a decode, when what was decoded is read and little more
// is kept: collection stays off until the hold is released or a
// collection runs, which the process's memory doubling starts, so that a
// short command ends without ever marking the decoded values and a long
// one collects as it would have.
//
// Tighten is for work that keeps a large buffer without pointers while it
// allocates and drops much more: it lowers the collector's percentage so
// that the heap stays near what is live rather than growing by a share of
// the buffer.
//
// A soft memory limit (GOMEMLIMIT, or debug.SetMemoryLimit) still applies
// while collection is held off: the collector runs when the heap reaches
// it.
package gcpause

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
)

var (
	mu      sync.Mutex
	holders int   // Hold and HoldUntilDoubled calls not yet released
	tight   []int // the percentages of the Tighten calls not yet released
	percent int   // the process's GC percentage, restored when the last hold or tightening ends

	bounded int   // HoldUntilDoubled calls not yet released, of generation gen
	limit   int64 // the memory limit to restore when they end
	gen     int   // changes each time the bounded holds end
)

// Hold turns the collector off until release is called. Holds may
// overlap, from any goroutine: the collector's setting is restored when
// the last one is released. release may be called more than once.
func Hold() (release func()) {
	mu.Lock()
	acquire()
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			drop(1)
			mu.Unlock()
		})
	}
}

// HoldUntilDoubled turns the collector off until release is called or a
// collection runs, whichever comes first. Unless collection was already
// off by the process's setting (GOGC=off), it lowers the soft memory limit
// (never raising it) to twice the memory the Go runtime holds when the
// first of overlapping HoldUntilDoubled calls is made, so that the heap
// doubling starts a collection. A collection that runs while the hold
// lasts (the first, or the one after if one was marking when the hold was
// taken) ends it, and every other HoldUntilDoubled of the time, restoring
// the collector's setting and the memory limit as they were before the
// first of them (a setting changed meanwhile is overwritten). Holds may
// overlap with each other and with Hold, which sets no limit. release may
// be called more than once.
func HoldUntilDoubled() (release func()) {
	mu.Lock()
	acquire()
	if bounded == 0 {
		limit = debug.SetMemoryLimit(-1)
		// With collection off by the process's own setting (GOGC=off) there
		// is no headroom to keep: only a limit already set applies.
		if percent >= 0 {
			debug.SetMemoryLimit(min(limit, 2*memoryInUse()))
		}
		armCollectionWatch(gen)
	}
	bounded++
	mine := gen
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			if gen == mine {
				bounded--
				drop(1)
				if bounded == 0 {
					endBounded()
				}
			}
			mu.Unlock()
		})
	}
}

// Tighten lowers the collector's percentage (GOGC) to at most p until
// release is called: for work that keeps a large buffer without pointers,
// such as the bytes of a file it reads twice, while it allocates and drops
// much more. The collector's usual headroom is a share of the live heap,
// here mostly the buffer; marking the buffer costs nothing, so collecting
// more often costs little and keeps the heap near what is live. A Hold in
// effect wins (collection stays off), and so does collection turned off
// by the process's own setting; tightenings may overlap, from any
// goroutine, and the lowest applies. release may be called more than once.
func Tighten(p int) (release func()) {
	mu.Lock()
	begin()
	tight = append(tight, p)
	apply()
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			i := slices.Index(tight, p)
			tight = slices.Delete(tight, i, i+1)
			apply()
			mu.Unlock()
		})
	}
}

// begin records the process's GC percentage when no hold or tightening
// is in effect; mu is held.
func begin() {
	if holders == 0 && len(tight) == 0 {
		percent = debug.SetGCPercent(-1)
	}
}

// apply sets the collector's percentage for the holds and tightenings in
// effect; mu is held.
func apply() {
	switch {
	case holders > 0:
		debug.SetGCPercent(-1)
	case len(tight) > 0: // the process's -1 (collection off) is the least
		debug.SetGCPercent(min(percent, slices.Min(tight)))
	default:
		debug.SetGCPercent(percent)
	}
}

// acquire counts a hold, turning the collector off; mu is held.
func acquire() {
	begin()
	holders++
	apply()
}

// drop ends n holds, restoring the collector's setting at the last (or
// the tightenings' percentage); mu is held.
func drop(n int) {
	holders -= n
	apply()
}

// endBounded restores the memory limit and starts a new generation, so
// that the releases and the collection watch of the ended one change
// nothing; mu is held.
func endBounded() {
	debug.SetMemoryLimit(limit)
	gen++
}

// armCollectionWatch ends the bounded holds of generation g when the next
// collection finishes: an object only the watch knows is unreachable, and
// its cleanup runs once a collection has found that.
func armCollectionWatch(g int) {
	sentinel := new([2]*byte) // holds pointers: not packed with other small objects
	runtime.AddCleanup(sentinel, func(g int) {
		mu.Lock()
		defer mu.Unlock()
		if gen != g || bounded == 0 {
			return
		}
		drop(bounded)
		bounded = 0
		endBounded()
	}, g)
}

// memoryInUse is the memory the soft limit counts: what the runtime has
// mapped, less the heap it has returned to the operating system.
func memoryInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
