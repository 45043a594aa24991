//go:build !unix

package chdb

// inUse cannot tell here; the engine refuses a directory in use itself.
func inUse(string) bool { return false }
