//go:build !unix

package main

import "time"

// processCPU is 0 where getrusage does not exist: ponens bench then
// reports no CPU time.
func processCPU() time.Duration { return 0 }
