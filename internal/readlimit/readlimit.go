package readlimit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/ponens/ponens/schema"
)

// TooLargeError is a file over its limit. It wraps schema.ErrTooLarge.
type TooLargeError struct {
	Path  string
	Size  int64 // the file's size; -1 when only known to be over Limit
	Limit int64
	Key   string // the configuration key of the limit
}

// Error names the file, its size, the limit and the key.
func (e *TooLargeError) Error() string {
	size := fmt.Sprintf("more than %d bytes", e.Limit)
	if e.Size >= 0 {
		size = fmt.Sprintf("%d bytes", e.Size)
	}
	return fmt.Sprintf("%s: %v: expected at most %d bytes (%s), got %s", e.Path, schema.ErrTooLarge, e.Limit, e.Key, size)
}

// Unwrap returns schema.ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return schema.ErrTooLarge }

// ReadFile reads the file at path, refusing it with a *TooLargeError when
// it holds more than limit bytes (limit <= 0: no limit); key names the
// configuration key of the limit in the error. It never reads more than
// limit+1 bytes.
func ReadFile(path string, limit int64, key string) ([]byte, error) {
	if limit <= 0 {
		return os.ReadFile(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > limit {
			return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit, Key: key}
		}
		buf.Grow(int(st.Size()) + bytes.MinRead) // one read, no regrowing
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	data := buf.Bytes()
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Size: -1, Limit: limit, Key: key}
	}
	return data, nil
}

// ExcerptBytes is the most of an input Excerpt keeps.
const ExcerptBytes = 120

// Excerpt returns s when it is at most ExcerptBytes long, and otherwise
// the ExcerptBytes around byte offset off (clamped to s), cut at rune
// boundaries and marked with "…" where text was left out.
func Excerpt(s string, off int) string {
	if len(s) <= ExcerptBytes {
		return s
	}
	off = min(max(off, 0), len(s))
	start := max(off-ExcerptBytes/2, 0)
	end := min(start+ExcerptBytes, len(s))
	start = max(end-ExcerptBytes, 0)
	for start > 0 && !utf8.RuneStart(s[start]) {
		start++
	}
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end--
	}
	out := s[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}
