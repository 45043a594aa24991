package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/schema"
)

// streamChecks checks the trace files against eng as they are read: each
// event of an event stream goes to its run's monitor as soon as its line
// is decoded, each verdict goes to a spill file as it is produced, and
// only the runs' monitor state, each rule's last verdict per run and where
// each run's events and verdicts are in the spill files remain in memory
// (the events' JSON is kept for the summary's content hash).
// A file that is not read as a stream (a reference trace) is read whole,
// as readTraces does. Errors come in readTraces' order: the first
// unreadable file, then a file without events, then the first run the
// monitor refuses. The caller calls done when the results are written.
//
// Files are read by a goroutine per engine of the rules (engines, built
// alike: an Engine serves one goroutine) at once; what comes out (runs,
// notes, errors) is in the order of paths, as one goroutine gives.
func streamChecks(paths []string, limits config.TraceConfig, engines []*monitor.Engine, notes io.Writer, prog *progress) (out []checkedRun, done func(), err error) {
	events, err := newSpill()
	if err != nil {
		return nil, nil, err
	}
	verdicts, err := newSpill()
	if err != nil {
		events.close()
		return nil, nil, err
	}
	spills := &spills{events: events, verdicts: verdicts}
	defer func() {
		if err != nil {
			spills.close()
		}
	}()
	lim := tracefile.Limits{MaxLine: limits.MaxEventBytes, MaxFileBytes: limits.MaxFileBytes, MaxReferenceBytes: limits.MaxReferenceBytes}
	var tick sync.Mutex // the bar is drawn by one goroutine at a time
	files := checkFiles(paths, len(engines), func(w int, p string) fileChecked {
		eng := engines[w]
		var fc fileChecked
		var streamed bool
		fc.runs, streamed, fc.err = streamFile(p, lim, eng, spills)
		if fc.err != nil {
			fc.err = exitWith(exitBadInput, "%v", fc.err)
		} else if !streamed {
			fc.runs, fc.err = wholeFile(p, lim, eng, &fc.notes)
		}
		tick.Lock()
		prog.tick()
		tick.Unlock()
		return fc
	})
	prog.clear()
	var noRuns, refused error
	for i, fc := range files {
		if fc.err != nil {
			return nil, nil, fc.err
		}
		notes.Write(fc.notes.Bytes())
		for _, r := range fc.runs {
			if r.err != nil && refused == nil {
				refused = r.err
			}
			out = append(out, r.checkedRun)
		}
		if len(fc.runs) == 0 && noRuns == nil {
			noRuns = exitWith(exitBadInput, "%s: no events: a trace file holds at least one run", paths[i])
		}
	}
	if noRuns != nil {
		return nil, nil, noRuns
	}
	if refused != nil {
		return nil, nil, refused
	}
	for _, s := range []*spill{spills.events, spills.verdicts} {
		if err := s.w.Flush(); err != nil {
			return nil, nil, fmt.Errorf("ponens check: spill file: %w", err)
		}
	}
	return out, spills.close, nil
}

// fileChecked is what reading one file gave.
type fileChecked struct {
	runs  []*liveRun
	notes bytes.Buffer // warnings, written out in file order
	err   error
}

// checkFiles calls check on every path, on up to workers goroutines (w is
// the goroutine's number), and returns the results in the order of paths.
func checkFiles(paths []string, workers int, check func(w int, path string) fileChecked) []fileChecked {
	out := make([]fileChecked, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range max(1, min(workers, len(paths))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = check(w, paths[i])
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// liveRun is a run being read: its monitor Run, each rule's last verdict
// so far (without its cause: the summary reads only its status and seq),
// and where its events' and verdicts' JSON went in the spill files.
type liveRun struct {
	checkedRun
	run     *monitor.Run
	closing *schema.Event
	chunks  chunks // of the events spill
	vchunks chunks // of the verdicts spill
	err     error  // the monitor refused an event; nothing more is fed
}

// spills are the spill files of a streaming check.
type spills struct{ events, verdicts *spill }

func (s *spills) close() {
	s.events.close()
	s.verdicts.close()
}

// scratch holds the buffers a goroutine encodes lines into, reused from
// one event to the next so that encoding allocates nothing per event.
type scratch struct{ event, cause, verdicts []byte }

// verdicts writes the verdicts to the verdict spill as they are produced
// (schema.AppendVerdictLine, the bytes file.EncodeVerdict gives) and keeps
// each rule's last one in Stream, which is all the summary reads of a
// verdict stream.
func (r *liveRun) verdicts(vs []schema.VerdictEvent, spill *spill, buf *scratch) error {
	if len(vs) == 0 {
		return nil
	}
	buf.verdicts = buf.verdicts[:0]
	for i := range vs {
		v := &vs[i]
		var err error
		buf.cause = buf.cause[:0]
		if v.Cause != nil {
			if buf.cause, err = schema.AppendEventLine(buf.cause, &v.Cause.Event); err != nil {
				return err
			}
		}
		if buf.verdicts, err = schema.AppendVerdictLine(buf.verdicts, v, buf.cause); err != nil {
			return err
		}
		last := *v
		last.Cause = nil
		if j := slices.IndexFunc(r.Stream, func(k schema.VerdictEvent) bool { return k.Rule.ID == v.Rule.ID }); j >= 0 {
			r.Stream[j] = last
		} else {
			r.Stream = append(r.Stream, last)
		}
	}
	return spill.write(buf.verdicts, &r.vchunks)
}

// streamFile reads the event stream at p as it goes (tracefile.Scan),
// feeding each run's monitor. streamed is false when p is to be read
// whole.
func streamFile(p string, lim tracefile.Limits, eng *monitor.Engine, spill *spills) (out []*liveRun, streamed bool, err error) {
	byID := make(map[string]*liveRun)
	var buf scratch
	streamed, err = tracefile.Scan(p, lim, func(ev *schema.Event) {
		r := byID[ev.RunID]
		if r == nil {
			r = &liveRun{checkedRun: checkedRun{File: p, RunID: ev.RunID, Outcome: schema.OutcomeCanceled}, run: eng.NewRun(ev.RunID)}
			byID[ev.RunID] = r
			out = append(out, r)
		}
		if r.err != nil {
			return
		}
		r.feed(ev, spill, &buf)
	})
	if err != nil || !streamed {
		return nil, streamed, err
	}
	for _, r := range out {
		if r.err == nil && !r.run.Ended() {
			if err := r.verdicts(r.run.End(), spill.verdicts, &buf); err != nil {
				r.err = fmt.Errorf("ponens check: spill file: %w", err)
			}
		}
		r.Results = r.run.Results()
		r.Encoded = spill.events.reader(r.chunks)
		r.Verdicts = spill.verdicts.reader(r.vchunks)
		r.run = nil // its state is no longer needed
	}
	return out, true, nil
}

// feed gives ev to the run's monitor and writes its JSON to the spill.
func (r *liveRun) feed(ev *schema.Event, spill *spills, buf *scratch) {
	vs, err := r.run.Add(ev)
	if errors.Is(err, monitor.ErrEnded) {
		r.err = exitWith(exitBadInput, "%s: run %s: event seq %d comes after the run ended with %s (seq %d)",
			r.File, r.RunID, ev.Seq, r.closing.Type, r.closing.Seq)
		return
	} else if err != nil {
		r.err = exitWith(exitBadInput, "%s: run %s: event seq %d: %v", r.File, r.RunID, ev.Seq, err)
		return
	}
	if err := r.verdicts(vs, spill.verdicts, buf); err != nil {
		r.err = fmt.Errorf("ponens check: spill file: %w", err)
		return
	}
	if ev.Type.IsTerminal() && r.closing == nil {
		r.closing = &schema.Event{Type: ev.Type, Seq: ev.Seq}
		r.Outcome = schema.RunOutcome([]schema.Event{*r.closing})
	}
	r.Count++
	buf.event, err = schema.AppendEventLine(buf.event[:0], ev)
	if err == nil {
		err = spill.events.write(buf.event, &r.chunks)
	}
	if err != nil {
		r.err = fmt.Errorf("ponens check: spill file: %w", err)
	}
}

// wholeFile reads the trace file at p whole (readTraces) and monitors its
// runs.
func wholeFile(p string, lim tracefile.Limits, eng *monitor.Engine, notes io.Writer) ([]*liveRun, error) {
	f, err := tracefile.ReadFile(p, lim)
	if err != nil {
		return nil, exitWith(exitBadInput, "%v", err)
	}
	for _, w := range f.Warnings {
		fmt.Fprintf(notes, "warning: %v\n", w)
	}
	out := make([]*liveRun, len(f.Runs))
	for i, r := range f.Runs {
		nr := namedRun{Name: filepath.ToSlash(p), File: p, Run: r, Reference: f.Reference}
		stream, results, err := monitorRun(eng, nr)
		out[i] = &liveRun{checkedRun: checkedRun{File: p, RunID: r.ID, Stream: stream, Results: results, Implied: impliedEnd(r), Events: r.Events}, err: err}
	}
	return out, nil
}

// spill is a temporary file holding the JSON of the events read as a
// stream, as the summary's content hash takes them, run by run in chunks.
type spill struct {
	mu  sync.Mutex // files are read concurrently
	f   *os.File
	w   *bufio.Writer
	off int64
}

// chunks are the stretches of a spill file that hold one run's lines, in
// order: each stretch as two varints, its start's distance from the end of
// the stretch before it and its length, so that a run whose lines are
// interleaved with other runs' costs a few bytes per line, not sixteen.
type chunks struct {
	enc []byte
	end int64 // where the last stretch ends
}

// add records the n bytes written at off, extending the last stretch when
// it ends at off.
func (c *chunks) add(off, n int64) {
	if len(c.enc) > 0 && c.end == off {
		// The run's lines follow each other: re-encode the last length,
		// the final varint (the one byte without its high bit before it).
		i := len(c.enc) - 1
		for i > 0 && c.enc[i-1]&0x80 != 0 {
			i--
		}
		last, _ := binary.Uvarint(c.enc[i:])
		c.enc = binary.AppendUvarint(c.enc[:i], last+uint64(n))
		c.end += n
		return
	}
	c.enc = binary.AppendUvarint(c.enc, uint64(off-c.end))
	c.enc = binary.AppendUvarint(c.enc, uint64(n))
	c.end = off + n
}

// each calls fn with every stretch, in order.
func (c *chunks) each(fn func(off, n int64)) {
	var end int64
	for b := c.enc; len(b) > 0; {
		gap, k := binary.Uvarint(b)
		n, m := binary.Uvarint(b[k:])
		b = b[k+m:]
		off := end + int64(gap)
		fn(off, int64(n))
		end = off + int64(n)
	}
}

func newSpill() (*spill, error) {
	f, err := os.CreateTemp("", "ponens-check-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("ponens check: spill file: %w", err)
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// write appends line to the spill and records it in the run's chunks.
func (s *spill) write(line []byte, c *chunks) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := s.off
	n, err := s.w.Write(line)
	s.off += int64(n)
	if err != nil {
		return err
	}
	c.add(start, int64(n))
	return nil
}

// reader returns a function reading the chunks in order, once the spill
// is flushed.
func (s *spill) reader(c chunks) func() io.Reader {
	return func() io.Reader {
		var rs []io.Reader
		c.each(func(off, n int64) { rs = append(rs, io.NewSectionReader(s.f, off, n)) })
		return io.MultiReader(rs...)
	}
}

// close removes the spill file.
func (s *spill) close() {
	s.f.Close()
	os.Remove(s.f.Name())
}
