// Package gcpause holds the garbage collector off while the process does
// work that keeps nearly everything it allocates, such as decoding a file
// whose values all stay in memory: collecting during it finds little to
// free, and marking a heap that keeps growing costs more than the work
// itself.
//
// A soft memory limit (GOMEMLIMIT, or debug.SetMemoryLimit) still applies
// while collection is held off: the collector runs when the heap reaches
// it.
package gcpause

import (
	"runtime/debug"
	"sync"
)

var (
	mu      sync.Mutex
	holders int // Hold calls not yet released
	percent int // the GC percentage to restore when the last one releases
)

// Hold turns the collector off until release is called. Holds may
// overlap, from any goroutine: the collector's setting is restored when
// the last one is released. release may be called more than once.
func Hold() (release func()) {
	mu.Lock()
	if holders == 0 {
		percent = debug.SetGCPercent(-1)
	}
	holders++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			holders--
			if holders == 0 {
				debug.SetGCPercent(percent)
			}
			mu.Unlock()
		})
	}
}
