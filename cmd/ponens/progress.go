package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress draws a progress bar on a terminal: "checking [====  ] 12/40
// traces". A nil *progress draws nothing, so callers need no checks.
type progress struct {
	w           io.Writer
	verb, unit  string
	done, total int
	drawn       time.Time
}

// newProgress returns a bar over total items on w, or nil unless w is a
// terminal and total is above minimum.
func newProgress(w io.Writer, total, minimum int, verb, unit string) *progress {
	f, ok := w.(*os.File)
	if !ok || total <= minimum || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: w, verb: verb, unit: unit, total: total}
}

// tick counts one item done and redraws at most ten times a second.
func (p *progress) tick() {
	if p == nil {
		return
	}
	p.done++
	if p.done < p.total && time.Since(p.drawn) < 100*time.Millisecond {
		return
	}
	p.drawn = time.Now()
	const width = 30
	filled := width * p.done / p.total
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %s", p.verb, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), p.done, p.total, p.unit)
}

// clear erases the bar.
func (p *progress) clear() {
	if p == nil || p.drawn.IsZero() {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}
