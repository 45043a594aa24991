package avxstate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
)

// Writer hands every byte to W, in order, in pieces of at most 256 KiB,
// so a hash over it is the hash of the whole.
func TestWriterPassesEveryByte(t *testing.T) {
	data := make([]byte, 3*chunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, n := range []int{0, 1, chunk - 1, chunk, chunk + 1, len(data)} {
		var got bytes.Buffer
		pieces := &countingWriter{w: &got}
		if m, err := (Writer{W: pieces}).Write(data[:n]); m != n || err != nil {
			t.Fatalf("%d bytes: wrote %d, %v", n, m, err)
		}
		if !bytes.Equal(got.Bytes(), data[:n]) {
			t.Fatalf("%d bytes: W received other bytes", n)
		}
		if pieces.max > chunk {
			t.Fatalf("%d bytes: a piece of %d bytes, over %d", n, pieces.max, chunk)
		}
		h := sha256.New()
		Writer{W: h}.Write(data[:n])
		if want := sha256.Sum256(data[:n]); !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("%d bytes: the hash through Writer differs", n)
		}
	}
}

// A failing W stops the write and its count and error are returned.
func TestWriterStopsAtError(t *testing.T) {
	boom := errors.New("full")
	w := &countingWriter{w: &bytes.Buffer{}, failAfter: 1}
	n, err := Writer{W: w}.Write(make([]byte, 2*chunk+1))
	if err == nil || err.Error() != boom.Error() || n != chunk {
		t.Fatalf("wrote %d, %v; want %d and the writer's error", n, err, chunk)
	}
}

type countingWriter struct {
	w         *bytes.Buffer
	max       int
	calls     int
	failAfter int // fail the call after this many, when > 0
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.calls++
	if c.failAfter > 0 && c.calls > c.failAfter {
		return 0, errors.New("full")
	}
	c.max = max(c.max, len(p))
	return c.w.Write(p)
}
