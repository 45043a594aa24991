//go:build !race

package monitor

// raceEnabled: the race detector is off (race_test.go).
const raceEnabled = false
