//go:build unix

package chdb

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// inUse tells whether another process holds the engine's lock on the data
// directory at path: the engine takes an exclusive flock of path/status
// while it runs. Asking first lets Open say so plainly, where the library
// would print its own exception text to the process's output.
func inUse(path string) bool {
	f, err := os.Open(filepath.Join(path, "status"))
	if err != nil {
		return false // no status file: no engine ran there, or it is not readable and the engine will say why
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return false
}
