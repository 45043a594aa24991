package sink

import "fmt"

// BatchKey names one insert of a batch for the store's insert
// deduplication: the stream sequences of its rows and a hash of their keys.
// The hash keeps two batches apart that hold other records at the same
// positions (a stream made anew, or two checks of other traces): only the
// same records at the same positions are dropped as a repeat. Both stores
// name their inserts with it, so the same batch carries the same token
// into either.
type BatchKey struct{ first, last, n, h uint64 }

// Add counts the row at stream sequence s with record sequence seq and
// the given key columns.
func (r *BatchKey) Add(s, seq uint64, key ...string) {
	if r.n == 0 {
		r.first, r.h = s, fnvOffset
	}
	r.first, r.last = min(r.first, s), max(r.last, s)
	r.n++
	r.h = fnvUint(fnvUint(r.h, s), seq)
	for _, k := range key {
		r.h = fnvAdd(r.h, k)
	}
}

// Token is the insert_deduplication_token of the batch's insert into
// table, "table:first-last:rows:hash"; empty when the batch has no stream
// position (records not read from a stream are never dropped).
func (r BatchKey) Token(table string) string {
	if r.n == 0 || r.first == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d-%d:%d:%016x", table, r.first, r.last, r.n, r.h)
}

// fnvUint hashes the eight bytes of u into h (FNV-1a).
func fnvUint(h, u uint64) uint64 {
	for range 8 {
		h = (h ^ (u & 0xff)) * fnvPrime
		u >>= 8
	}
	return h
}

const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

// fnvAdd hashes s and a separator into h (FNV-1a, 64 bits).
func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return (h ^ 0xff) * fnvPrime
}
