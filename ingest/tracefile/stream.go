package tracefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"

	"github.com/ponens/ponens/internal/readlimit"
	"github.com/ponens/ponens/schema"
)

// Scan reads the event stream at path under l as it goes, handing each
// event that passed every check to fn in file order (schema.ScanJSONL), so
// that memory does not grow with the file. Its events and errors are those
// ReadFile gives for the file.
//
// It reads nothing and returns streamed false when the file is not known
// to be an event stream from its first line (a reference trace, a file of
// one line, or not a regular file): the caller then reads it with ReadFile.
func Scan(path string, l Limits, fn func(ev *schema.Event)) (streamed bool, err error) {
	return scan(path, l, func(name string, r io.Reader) error { return schema.ScanJSONL(name, r, l.MaxLine, fn) })
}

// ScanBatches is Scan that decodes the lines on up to workers goroutines
// and hands the events to fn in batches, in file order
// (schema.ScanJSONLBatches); fn owns each batch.
func ScanBatches(path string, l Limits, workers int, fn func(b schema.ScannedEvents)) (streamed bool, err error) {
	return scan(path, l, func(name string, r io.Reader) error {
		return schema.ScanJSONLBatches(name, r, l.MaxLine, workers, fn)
	})
}

// scan opens path and, when it is an event stream, reads it with read
// under l's file limit.
func scan(path string, l Limits, read func(name string, r io.Reader) error) (streamed bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	if l.MaxFileBytes > 0 && st.Size() > l.MaxFileBytes {
		return true, &readlimit.TooLargeError{Path: path, Size: st.Size(), Limit: l.MaxFileBytes, Key: "trace.max_file_bytes"}
	}
	if !streamable(f) {
		return false, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, nil
	}
	var r io.Reader = f
	if l.MaxFileBytes > 0 {
		r = io.LimitReader(f, l.MaxFileBytes+1) // the file grew since Stat: ReadFile refuses it
	}
	cr := &countingReader{r: r}
	err = read(path, cr)
	if l.MaxFileBytes > 0 && cr.n > l.MaxFileBytes {
		return true, &readlimit.TooLargeError{Path: path, Size: -1, Limit: l.MaxFileBytes, Key: "trace.max_file_bytes"}
	}
	return true, err
}

// streamable reports whether the file r reads is an event stream by
// schema.IsReference's rule, from its first line: a line that is a JSON
// value on its own, followed by more than white space, cannot begin a
// reference trace (one JSON document).
func streamable(r io.Reader) bool {
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := br.ReadSlice('\n')
	if err != nil {
		return false // one line, or a first line over 64 KiB: read whole
	}
	trimmed := bytes.TrimSpace(first)
	if len(trimmed) == 0 || string(trimmed) == "{" || !json.Valid(trimmed) {
		return false
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return false
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			return true
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
