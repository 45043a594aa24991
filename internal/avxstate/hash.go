package avxstate

import "hash"

// chunk bounds what Hash hands the hash at once, so that a goroutine
// resumed on a thread whose state another goroutine dirtied pays for one
// chunk at most.
const chunk = 256 << 10

// Hash is a hash.Hash whose Write calls Clear before each piece of at
// most 256 KiB it hands the embedded hash.
type Hash struct{ hash.Hash }

// Write writes p to the hash, clearing the AVX upper state before each
// piece.
func (h Hash) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), chunk)
		Clear()
		m, err := h.Hash.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}
