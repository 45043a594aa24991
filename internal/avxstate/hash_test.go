package avxstate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"testing"
)

// Hash hands every byte to the hash, in order, in pieces of at most
// 256 KiB, so its sum is the sum of the whole.
func TestHashTakesEveryByte(t *testing.T) {
	data := make([]byte, 3*chunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, n := range []int{0, 1, chunk - 1, chunk, chunk + 1, len(data)} {
		rec := &recorder{Hash: sha256.New()}
		if m, err := (Hash{Hash: rec}).Write(data[:n]); m != n || err != nil {
			t.Fatalf("%d bytes: wrote %d, %v", n, m, err)
		}
		if !bytes.Equal(rec.got.Bytes(), data[:n]) {
			t.Fatalf("%d bytes: the hash received other bytes", n)
		}
		if rec.max > chunk {
			t.Fatalf("%d bytes: a piece of %d bytes, over %d", n, rec.max, chunk)
		}
		if want := sha256.Sum256(data[:n]); !bytes.Equal(rec.Sum(nil), want[:]) {
			t.Fatalf("%d bytes: the sum through Hash differs", n)
		}
	}
}

// A failing hash stops the write; the count and its error are returned.
func TestHashStopsAtError(t *testing.T) {
	rec := &recorder{Hash: sha256.New(), failAfter: 1}
	n, err := Hash{Hash: rec}.Write(make([]byte, 2*chunk+1))
	if !errors.Is(err, errFull) || n != chunk {
		t.Fatalf("wrote %d, %v; want %d and %v", n, err, chunk, errFull)
	}
}

var errFull = errors.New("full")

// recorder is a hash that keeps what it is given and the largest piece,
// and fails every write after failAfter of them when failAfter > 0.
type recorder struct {
	hash.Hash
	got       bytes.Buffer
	max       int
	calls     int
	failAfter int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.calls++
	if r.failAfter > 0 && r.calls > r.failAfter {
		return 0, errFull
	}
	r.max = max(r.max, len(p))
	r.got.Write(p)
	return r.Hash.Write(p)
}
