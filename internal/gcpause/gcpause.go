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
// A soft memory limit (GOMEMLIMIT, or debug.SetMemoryLimit) still applies
// while collection is held off: the collector runs when the heap reaches
// it.
package gcpause

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

var (
	mu      sync.Mutex
	holders int // Hold and HoldUntilDoubled calls not yet released
	percent int // the GC percentage to restore when the last one releases

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

// acquire counts a hold, turning the collector off at the first; mu is held.
func acquire() {
	if holders == 0 {
		percent = debug.SetGCPercent(-1)
	}
	holders++
}

// drop ends n holds, restoring the collector's setting at the last; mu is
// held.
func drop(n int) {
	holders -= n
	if holders == 0 {
		debug.SetGCPercent(percent)
	}
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
