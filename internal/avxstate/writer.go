package avxstate

import "io"

// chunk bounds what Writer hands W at once, so that a goroutine resumed
// on a thread whose state another goroutine dirtied pays for one chunk
// at most.
const chunk = 256 << 10

// Writer is an io.Writer (a hash, typically) that calls Clear before
// each piece of at most 256 KiB it writes to W.
type Writer struct{ W io.Writer }

// Write writes p to w.W, clearing the AVX upper state before each piece.
func (w Writer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), chunk)
		Clear()
		m, err := w.W.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}
