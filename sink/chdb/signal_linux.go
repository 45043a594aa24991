package chdb

import (
	"syscall"
	"unsafe"
)

// sigaction is the kernel's struct sigaction on Linux.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// nsig is the number of signals of Linux (1..64).
const nsig = 64

// keepGoSignals runs start, which may install signal handlers of its own
// (ClickHouse installs them for SIGSEGV, SIGBUS, SIGTERM, …), and puts
// back the handlers that were there before, the Go runtime's: Go's
// panics, preemption and signal.Notify depend on them.
func keepGoSignals(start func()) {
	var saved [nsig + 1]sigaction
	var ok [nsig + 1]bool
	for s := 1; s <= nsig; s++ {
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(s), 0, uintptr(unsafe.Pointer(&saved[s])), 8, 0, 0)
		ok[s] = errno == 0
	}
	start()
	for s := 1; s <= nsig; s++ {
		if !ok[s] || s == int(syscall.SIGKILL) || s == int(syscall.SIGSTOP) {
			continue
		}
		var now sigaction
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(s), 0, uintptr(unsafe.Pointer(&now)), 8, 0, 0)
		if now != saved[s] {
			syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&saved[s])), 0, 8, 0, 0)
		}
	}
}
