//go:build unix

package claudecode

import (
	"os"
	"path/filepath"
	"syscall"
)

// Lock takes an exclusive lock on the history (a file beside it) until
// the returned function is called.
func (h History) Lock() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(h.Path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(h.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
