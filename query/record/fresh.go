package record

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Checkout is the current source entries are compared with: a directory
// the recorded paths are relative to. A nil *Checkout compares nothing:
// freshness then rests on the trace alone. A Checkout is not safe for
// concurrent use.
type Checkout struct {
	FS   fs.FS  // the directory
	Name string // how messages name it
	seen map[string]fileHashes
}

// NewCheckout returns the checkout in directory dir.
func NewCheckout(dir string) *Checkout {
	return &Checkout{FS: os.DirFS(dir), Name: dir}
}

type fileHashes struct {
	sha256, git string
	err         error
}

// hashes returns the sha256 and the git blob hash of the file at p, hex.
func (c *Checkout) hashes(p string) fileHashes {
	if h, ok := c.seen[p]; ok {
		return h
	}
	var h fileHashes
	data, err := fs.ReadFile(c.FS, p)
	if err != nil {
		h.err = err
	} else {
		s := sha256.Sum256(data)
		g := sha1.New()
		fmt.Fprintf(g, "blob %d\x00", len(data))
		g.Write(data)
		h.sha256, h.git = hex.EncodeToString(s[:]), hex.EncodeToString(g.Sum(nil))
	}
	if c.seen == nil {
		c.seen = map[string]fileHashes{}
	}
	c.seen[p] = h
	return h
}

// Freshness is whether an entry still describes the source: its state,
// why (for out_of_date and unknown) and the "file@hash" it was derived
// from (null when no hash was recorded).
type Freshness struct {
	State       string  `json:"state"`
	Since       string  `json:"since,omitempty"`
	DerivedFrom *string `json:"derived_from"`
}

// changedSince is the seed's wording of an out-of-date entry.
const changedSince = "the source changed after this was established"

// Freshness tells whether the entry still describes its source. It is
// out_of_date when the trace shows the file changed after the entry was
// derived from it, or when the file in the checkout hashes otherwise than
// recorded (or is not there); unknown when no file or no hash was
// recorded, or the checkout cannot tell; fresh otherwise.
func (e *Entry) Freshness(c *Checkout) Freshness {
	f := Freshness{State: Fresh}
	if s := e.Source.String(); s != "" {
		f.DerivedFrom = &s
	}
	path, hash := e.Source.Path, e.Source.Hash
	switch {
	case e.Changed != "":
		return f.set(OutOfDate, "%s (%s)", changedSince, e.Changed)
	case path == "":
		return f.set(Unknown, "the record names no source file for it")
	case hash == "":
		return f.set(Unknown, "no hash of %s was recorded", path)
	case c == nil:
		return f
	case !fs.ValidPath(path):
		return f.set(Unknown, "%s is not a path inside %s", path, c.Name)
	}
	h := c.hashes(path)
	switch {
	case errors.Is(h.err, fs.ErrNotExist):
		return f.set(OutOfDate, "%s (%s is not in %s)", changedSince, path, c.Name)
	case h.err != nil:
		return f.set(Unknown, "%s in %s cannot be read: %v", path, c.Name, errors.Unwrap(h.err))
	}
	algo, want, ok := normHash(hash)
	if !ok {
		return f.set(Unknown, "the recorded hash %q is not a hex digest", hash)
	}
	if (algo != "git" && strings.HasPrefix(h.sha256, want)) || (algo != "sha256" && strings.HasPrefix(h.git, want)) {
		return f
	}
	got := h.sha256
	if algo == "git" {
		got = h.git
	}
	return f.set(OutOfDate, "%s (%s in %s hashes to %s)", changedSince, path, c.Name, got[:min(len(got), max(len(want), 8))])
}

func (f Freshness) set(state, format string, args ...any) Freshness {
	f.State, f.Since = state, fmt.Sprintf(format, args...)
	return f
}

// normHash splits a recorded hash into its algorithm ("sha256", "git" for
// a git blob id or sha1, "" when not said: either) and its lower-case hex
// digits; ok is false when it is not at least 6 hex digits.
func normHash(h string) (algo, digits string, ok bool) {
	h = strings.ToLower(strings.TrimSpace(h))
	if a, rest, found := strings.Cut(h, ":"); found {
		switch a {
		case "sha256":
			algo = "sha256"
		case "sha1", "git":
			algo = "git"
		default:
			return "", "", false
		}
		h = rest
	}
	if len(h) < 6 {
		return "", "", false
	}
	if strings.Trim(h, "0123456789abcdef") != "" {
		return "", "", false
	}
	return algo, h, true
}

// sameHash reports whether two recorded hashes name the same content: one
// is a prefix of the other (abbreviations), ignoring case.
func sameHash(a, b string) bool {
	_, x, okA := normHash(a)
	_, y, okB := normHash(b)
	if !okA || !okB {
		return strings.EqualFold(a, b)
	}
	return strings.HasPrefix(x, y) || strings.HasPrefix(y, x)
}
