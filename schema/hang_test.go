package schema

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

func watchdog(t *testing.T, data []byte) func() bool {
	tm := time.AfterFunc(3*time.Second, func() {
		name := fmt.Sprintf("/tmp/hang-%d", time.Now().UnixNano())
		os.WriteFile(name, data, 0o644)
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		os.WriteFile(name+".stack", buf[:n], 0o644)
	})
	return tm.Stop
}
