package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/ponens/ponens/config"
)

// autoMemoryRatio is the share of a cgroup's memory limit runtime.memory_limit
// auto gives the Go heap: the rest is for what the runtime does not count
// (goroutine stacks, the file store's page cache, fragmentation).
const autoMemoryRatio = 0.9

// setMemoryLimit sets the Go runtime's soft memory limit as
// runtime.memory_limit asks (config.RuntimeConfig), unless GOMEMLIMIT is
// set, and says what it set. It returns the limit in bytes, 0 for none.
func setMemoryLimit(c config.RuntimeConfig, log *slog.Logger) int64 {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		limit := debug.SetMemoryLimit(-1)
		if limit == math.MaxInt64 { // GOMEMLIMIT=off
			return 0
		}
		log.Info("memory limit", "bytes", limit, "from", "GOMEMLIMIT="+v)
		return limit
	}
	switch c.MemoryLimit {
	case config.MemoryLimitOff:
		return 0
	case config.MemoryLimitAuto:
		cg, err := memlimit.FromCgroup()
		switch {
		case errors.Is(err, memlimit.ErrNoCgroup) || errors.Is(err, memlimit.ErrNoLimit) || errors.Is(err, memlimit.ErrCgroupsNotSupported) ||
			err == nil && (cg == 0 || cg >= math.MaxInt64):
			log.Debug("memory limit: none (runtime.memory_limit auto: no cgroup memory limit)")
			return 0
		case err != nil:
			log.Warn("memory limit: none; could not read the cgroup memory limit (runtime.memory_limit auto)", "err", err)
			return 0
		}
		limit := int64(float64(cg) * autoMemoryRatio)
		debug.SetMemoryLimit(limit)
		log.Info("memory limit", "bytes", limit, "from", "runtime.memory_limit auto: 90% of the cgroup memory limit", "cgroup_bytes", cg)
		return limit
	default:
		limit, err := config.ParseSize(c.MemoryLimit)
		if err != nil { // the configuration was validated: not reached
			log.Error("memory limit: none", "err", fmt.Errorf("runtime.memory_limit: %w", err))
			return 0
		}
		debug.SetMemoryLimit(limit)
		log.Info("memory limit", "bytes", limit, "from", "runtime.memory_limit "+c.MemoryLimit)
		return limit
	}
}
