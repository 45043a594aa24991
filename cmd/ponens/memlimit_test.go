package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/ponens/ponens/config"
)

// TestSetMemoryLimit: a size sets the Go runtime's soft limit, off sets
// none, and auto follows the cgroup: 90% of its limit when there is one
// (as in a container), none otherwise.
func TestSetMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	if got := setMemoryLimit(config.RuntimeConfig{MemoryLimit: "900MiB"}, log); got != 900<<20 || debug.SetMemoryLimit(-1) != 900<<20 {
		t.Errorf("900MiB: returned %d, runtime limit %d", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := setMemoryLimit(config.RuntimeConfig{MemoryLimit: config.MemoryLimitOff}, log); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("off: returned %d, runtime limit %d", got, debug.SetMemoryLimit(-1))
	}

	t.Setenv("GOMEMLIMIT", "off")
	if got := setMemoryLimit(config.RuntimeConfig{MemoryLimit: "900MiB"}, log); got != 0 {
		t.Errorf("GOMEMLIMIT=off: returned %d, want 0 (none)", got)
	}
	t.Setenv("GOMEMLIMIT", "")

	want := int64(0)
	if cg, err := memlimit.FromCgroup(); err == nil && cg > 0 && cg < math.MaxInt64 {
		want = int64(float64(cg) * autoMemoryRatio)
	}
	got := setMemoryLimit(config.RuntimeConfig{MemoryLimit: config.MemoryLimitAuto}, log)
	if got != want {
		t.Errorf("auto: returned %d, want %d (90%% of the cgroup limit, or none)", got, want)
	}
	if want > 0 && debug.SetMemoryLimit(-1) != want {
		t.Errorf("auto: runtime limit %d, want %d", debug.SetMemoryLimit(-1), want)
	}
	t.Logf("auto here: %d bytes (0: no cgroup memory limit)", got)
}
