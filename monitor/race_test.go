//go:build race

package monitor

// raceEnabled: the race detector is on, and slows the differential tests
// tenfold, so they run fewer cases.
const raceEnabled = true
