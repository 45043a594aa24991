package readlimit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(p, 100, "k"); err != nil || len(data) != 100 {
		t.Errorf("at the limit: %d bytes, %v", len(data), err)
	}
	_, err := ReadFile(p, 99, "trace.max_file_bytes")
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, schema.ErrTooLarge) ||
		err.Error() != p+": too large: expected at most 99 bytes (trace.max_file_bytes), got 100 bytes" {
		t.Errorf("over the limit: %v", err)
	}
	// A file whose size is not known in advance: read up to the limit only.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 1000 {
			if _, err := w.Write([]byte(strings.Repeat("y", 1000))); err != nil {
				break
			}
		}
		w.Close()
	}()
	defer r.Close()
	_, err = ReadFile("/dev/fd/"+strconv.Itoa(int(r.Fd())), 5000, "k")
	if !errors.As(err, &tl) || tl.Size != -1 || !strings.Contains(err.Error(), "got more than 5000 bytes") {
		t.Errorf("a pipe over the limit: %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt("short", 3); got != "short" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("a", 500) + "HERE" + strings.Repeat("é", 500)
	got := Excerpt(long, 500)
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || !strings.Contains(got, "HERE") || len(got) > ExcerptBytes+2*len("…") {
		t.Errorf("around 500: %q (%d bytes)", got, len(got))
	}
	if got := Excerpt(long, 0); strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Errorf("at the start: %q", got)
	}
	if got := Excerpt(long, len(long)); !strings.HasPrefix(got, "…") || strings.HasSuffix(got, "…") || !strings.HasSuffix(got, "é") {
		t.Errorf("at the end: %q", got)
	}
}
