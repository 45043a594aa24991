package avxstate

import "golang.org/x/sys/cpu"

var hasAVX = cpu.X86.HasAVX

// Clear executes VZEROUPPER when the processor has AVX, so that the SSE
// instructions that follow do not pay for a dirty upper register state.
func Clear() {
	if hasAVX {
		vzeroupper()
	}
}

func vzeroupper()
