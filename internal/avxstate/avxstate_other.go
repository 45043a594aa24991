//go:build !amd64

package avxstate

// Clear does nothing: only amd64 has the AVX register state it clears.
func Clear() {}
