package main

import (
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
	"github.com/ponens/ponens/internal/readlimit"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/schema"
)

// streamChecks checks the trace files against eng as they are read: each
// event of an event stream goes to its run's monitor as soon as its line
// is decoded, each verdict goes to a spill file as it is produced, and
// only the runs' monitor state, each rule's last verdict per run and where
// each run's events and verdicts are in the spill files remain in memory
// (the events' JSON is kept for the summary's content hash). A large
// reference trace is read as it goes too (streamReference); any other
// reference trace is read whole, as readTraces does. Errors come in
// readTraces' order: the first unreadable file, then a file without
// events, then the first run the monitor refuses. The caller calls done when the results are written: it
// closes the spill files and ends the holds on the collector that reading
// reference traces left (tracefile.File.Release).
//
// Files are read by a goroutine per engine of the rules (engines, built
// alike: an Engine serves one goroutine) at once; what comes out (runs,
// notes, errors) is in the order of paths, as one goroutine gives.
func streamChecks(paths []string, limits config.TraceConfig, engines []*monitor.Engine, notes io.Writer, prog *progress) (out []checkedRun, done func(), err error) {
	pool := &spillPool{}
	var releases []func()
	finish := func() {
		pool.close()
		for _, release := range releases {
			release()
		}
	}
	defer func() {
		if err != nil {
			finish()
		}
	}()
	lim := tracefile.Limits{MaxLine: limits.MaxEventBytes, MaxFileBytes: limits.MaxFileBytes, MaxReferenceBytes: limits.MaxReferenceBytes}
	groups := engineGroups(engines, len(paths))
	var tick sync.Mutex // the bar is drawn by one goroutine at a time
	files := checkFiles(paths, len(groups), func(w int, p string) fileChecked {
		engs := groups[w]
		var fc fileChecked
		var streamed bool
		fc.runs, streamed, fc.err = streamFile(p, lim, engs, pool)
		if fc.err != nil {
			fc.err = exitWith(exitBadInput, "%v", fc.err)
		} else if !streamed {
			fc.runs, streamed, fc.err = streamReference(p, lim, engs[0], pool)
			if fc.err != nil {
				fc.err = exitWith(exitBadInput, "%v", fc.err)
			} else if !streamed {
				fc.runs, fc.release, fc.err = wholeFile(p, lim, engs[0], &fc.notes)
			}
		}
		tick.Lock()
		prog.tick()
		tick.Unlock()
		return fc
	})
	prog.clear()
	for _, fc := range files {
		if fc.release != nil {
			releases = append(releases, fc.release)
		}
	}
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
	if err := pool.flush(); err != nil {
		return nil, nil, fmt.Errorf("ponens check: spill file: %w", err)
	}
	return out, finish, nil
}

// engineGroups splits the engines among the goroutines that read files at
// once: as many goroutines as engines (or files, when fewer), each with
// one engine or more, to monitor a file's runs on as many goroutines.
func engineGroups(engines []*monitor.Engine, files int) [][]*monitor.Engine {
	groups := make([][]*monitor.Engine, max(1, min(len(engines), files)))
	for i, e := range engines {
		groups[i%len(groups)] = append(groups[i%len(groups)], e)
	}
	return groups
}

// fileChecked is what reading one file gave.
type fileChecked struct {
	runs    []*liveRun
	notes   bytes.Buffer // warnings, written out in file order
	release func()       // the file's hold on the collector (tracefile.File.Release)
	err     error
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
// and where its events' and verdicts' JSON went in the spill files. The
// lines are gathered in pend and vpend and written to the spill files a
// stretch at a time, so that the runs of an interleaved file cost a read
// per stretch, not per line, when the summary and the verdict files read
// them back.
type liveRun struct {
	checkedRun
	run      *monitor.Run
	closing  *schema.Event
	chunks   chunks        // of the events spill
	vchunks  chunks        // of the verdicts spill
	pend     []byte        // event lines not yet in the spill
	vpend    []byte        // verdict lines not yet in the spill
	last     []lastVerdict // each rule's last verdict, until finished
	lastLine []byte        // the line of the last event fed (Run.AddEncoded)
	err      error         // the monitor refused an event; nothing more is fed
	shard    int           // the goroutine that monitors it
}

// spillStretch is how many bytes of a run's lines are gathered before
// they go to a spill file. A gathering buffer is made with room for a
// stretch and a typical line: an event line (gatherEvents) or a verdict
// line, which quotes its cause (gatherVerdicts). The gathering buffers of
// 10,000 open runs take 10,000 × (gatherEvents + gatherVerdicts).
const (
	spillStretch   = 512
	gatherEvents   = spillStretch + spillStretch/2
	gatherVerdicts = 2 * spillStretch
)

// spills are the spill files of a streaming check that one goroutine
// writes at a time.
type spills struct{ events, verdicts *spill }

// spillPool hands out spill files, a pair per goroutine monitoring runs,
// and takes them back for the next file.
type spillPool struct {
	mu   sync.Mutex
	all  []*spills
	free []*spills
}

// get returns a free pair of spill files, made when none is free.
func (p *spillPool) get() (*spills, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s, nil
	}
	events, err := newSpill()
	if err != nil {
		return nil, err
	}
	verdicts, err := newSpill()
	if err != nil {
		events.close()
		return nil, err
	}
	s := &spills{events: events, verdicts: verdicts}
	p.all = append(p.all, s)
	return s, nil
}

// put takes back a pair that get gave.
func (p *spillPool) put(s *spills) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, s)
}

// flush writes out what the spill files buffer.
func (p *spillPool) flush() error {
	for _, s := range p.all {
		for _, f := range []*spill{s.events, s.verdicts} {
			if err := f.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// close removes the spill files.
func (p *spillPool) close() {
	for _, s := range p.all {
		s.events.close()
		s.verdicts.close()
	}
}

// scratch is what a goroutine monitoring runs reuses from one verdict to
// the next: the buffer causes are encoded into, the kinds of verdict its
// runs' last verdicts name, and how many rules its engine has.
type scratch struct {
	cause []byte
	kinds verdictKinds
	rules int
}

// verdictKinds numbers the verdicts of a check without their run, seq and
// cause (the rule, status, leaning and mode): there are a few per rule, so
// a run's last verdicts are kept as a number and a seq each.
type verdictKinds struct {
	index map[verdictKind]uint32
	all   []schema.VerdictEvent
}

type verdictKind struct {
	rule                  schema.RuleRef
	status, leaning, mode string
}

func (k *verdictKinds) of(v *schema.VerdictEvent) uint32 {
	key := verdictKind{v.Rule, string(v.Status), string(v.Leaning), string(v.Mode)}
	if n, ok := k.index[key]; ok {
		return n
	}
	if k.index == nil {
		k.index = make(map[verdictKind]uint32)
	}
	n := uint32(len(k.all))
	k.index[key] = n
	k.all = append(k.all, schema.VerdictEvent{Rule: v.Rule, Status: v.Status, Leaning: v.Leaning, Mode: v.Mode})
	return n
}

// lastVerdict is a rule's last verdict in a run: its seq and its kind.
type lastVerdict struct {
	seq  uint64
	kind uint32
}

// verdicts encodes the verdicts as they are produced
// (schema.AppendVerdictLine, the bytes file.EncodeVerdict gives) and keeps
// each rule's last one, which is all the summary reads of a verdict
// stream (Stream, once the run is finished).
func (r *liveRun) verdicts(vs []schema.VerdictEvent, spill *spill, buf *scratch) error {
	for i := range vs {
		v := &vs[i]
		var err error
		buf.cause = buf.cause[:0]
		if v.Cause != nil {
			if buf.cause, err = schema.AppendEventLine(buf.cause, &v.Cause.Event); err != nil {
				return err
			}
		}
		if r.vpend == nil {
			r.vpend = make([]byte, 0, gatherVerdicts)
		}
		if r.vpend, err = schema.AppendVerdictLine(r.vpend, v, buf.cause); err != nil {
			return err
		}
		last := lastVerdict{v.Seq, buf.kinds.of(v)}
		if j := slices.IndexFunc(r.last, func(k lastVerdict) bool { return buf.kinds.all[k.kind].Rule.ID == v.Rule.ID }); j >= 0 {
			r.last[j] = last
		} else {
			if r.last == nil {
				r.last = make([]lastVerdict, 0, buf.rules)
			}
			r.last = append(r.last, last)
		}
	}
	return spillPending(spill, &r.vpend, &r.vchunks, spillStretch)
}

// stream is the run's last verdicts as verdict events, in the order of
// each rule's first verdict.
func (r *liveRun) stream(kinds *verdictKinds) []schema.VerdictEvent {
	out := make([]schema.VerdictEvent, len(r.last))
	for i, l := range r.last {
		out[i] = kinds.all[l.kind]
		out[i].RunID, out[i].Seq = r.RunID, l.seq
	}
	return out
}

// spillPending writes the lines in *pend to the spill once they are at
// least min bytes.
func spillPending(spill *spill, pend *[]byte, c *chunks, min int) error {
	if len(*pend) == 0 || len(*pend) < min {
		return nil
	}
	err := spill.write(*pend, c)
	if cap(*pend) > 2*gatherVerdicts {
		*pend = nil // grown for a long line: made again when needed
	} else {
		*pend = (*pend)[:0]
	}
	return err
}

// shardEvent is an event for the goroutine monitoring its run.
type shardEvent struct {
	run *liveRun
	ev  *schema.Event
	enc []byte // ev's AppendEventLine line, or nil
}

// shard is a goroutine monitoring some of a file's runs with its own
// engine and spill files.
type shard struct {
	eng  *monitor.Engine
	sp   *spills
	in   chan []shardEvent
	runs []*liveRun // in the order of their first event
	buf  scratch
}

// streamFile reads the event stream at p as it goes (tracefile.ScanBatches),
// decoding its lines on as many goroutines as engines, and monitors its
// runs on a goroutine per engine, each run on one of them (its events
// in file order), so that what each run gives is what one goroutine
// gives. The runs come out in the order of their first event. streamed
// is false when p is to be read whole.
func streamFile(p string, lim tracefile.Limits, engs []*monitor.Engine, pool *spillPool) (out []*liveRun, streamed bool, err error) {
	shards := make([]*shard, len(engs))
	for i, eng := range engs {
		sp, err := pool.get()
		if err != nil {
			return nil, false, err
		}
		defer pool.put(sp)
		shards[i] = &shard{eng: eng, sp: sp, in: make(chan []shardEvent, 4)}
	}
	var wg sync.WaitGroup
	for _, sh := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh.monitor(p)
		}()
	}
	byID := make(map[string]*liveRun)
	pending := make([][]shardEvent, len(shards))
	streamed, err = tracefile.ScanBatches(p, lim, len(engs), func(b schema.ScannedEvents) {
		for i := range b.Events {
			ev := &b.Events[i]
			r := byID[ev.RunID]
			if r == nil {
				r = &liveRun{checkedRun: checkedRun{File: p, RunID: ev.RunID, Outcome: schema.OutcomeCanceled}}
				r.shard = len(out) % len(shards)
				byID[ev.RunID] = r
				out = append(out, r)
			}
			pending[r.shard] = append(pending[r.shard], shardEvent{r, ev, b.Encoded[i]})
		}
		for i, sh := range shards {
			if len(pending[i]) > 0 {
				sh.in <- pending[i]
				pending[i] = nil
			}
		}
	})
	for _, sh := range shards {
		close(sh.in)
	}
	wg.Wait()
	if err != nil || !streamed {
		return nil, streamed, err
	}
	return out, true, nil
}

// monitor feeds each event that comes in to its run's monitor, then ends
// the runs, on one goroutine.
func (sh *shard) monitor(file string) {
	sh.buf.rules = len(sh.eng.Rules())
	for evs := range sh.in {
		for _, se := range evs {
			r := se.run
			if r.err != nil {
				continue
			}
			if r.run == nil {
				r.run = sh.eng.NewRun(r.RunID)
				sh.runs = append(sh.runs, r)
			}
			r.feed(se.ev, se.enc, sh.sp, &sh.buf)
		}
	}
	for _, r := range sh.runs {
		r.finish(sh.sp, &sh.buf)
	}
}

// finish ends the run when no closing event came, writes what is left of
// its lines to the spills and keeps its results.
func (r *liveRun) finish(sp *spills, buf *scratch) {
	if r.err == nil && !r.run.Ended() {
		if err := r.verdicts(r.run.End(), sp.verdicts, buf); err != nil {
			r.err = fmt.Errorf("ponens check: spill file: %w", err)
		}
	}
	if r.err == nil {
		err := spillPending(sp.events, &r.pend, &r.chunks, 0)
		if err == nil {
			err = spillPending(sp.verdicts, &r.vpend, &r.vchunks, 0)
		}
		if err != nil {
			r.err = fmt.Errorf("ponens check: spill file: %w", err)
		}
	}
	r.pend, r.vpend, r.lastLine = nil, nil, nil
	r.Stream, r.last = r.stream(&buf.kinds), nil
	r.Results = r.run.Results()
	r.Encoded = sp.events.reader(r.chunks)
	r.Verdicts = sp.verdicts.reader(r.vchunks)
	r.run = nil // its state is no longer needed
}

// feed gives ev to the run's monitor and gathers its JSON (enc, or
// encoded here when nil) for the spill.
func (r *liveRun) feed(ev *schema.Event, enc []byte, spill *spills, buf *scratch) {
	var vs []schema.VerdictEvent
	var err error
	if enc != nil {
		// The run keeps its last event as this copy of its line, not as
		// the decoded event, which would hold its batch.
		r.lastLine = append(r.lastLine[:0], enc...)
		vs, err = r.run.AddEncoded(ev, r.lastLine)
	} else {
		vs, err = r.run.Add(ev)
	}
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
		r.Implied = ev.End != nil && ev.End.Implied
	}
	r.Count++
	if r.pend == nil {
		r.pend = make([]byte, 0, gatherEvents)
	}
	if enc != nil {
		r.pend = append(r.pend, enc...)
	} else {
		r.pend, err = schema.AppendEventLine(r.pend, ev)
	}
	if err == nil {
		err = spillPending(spill.events, &r.pend, &r.chunks, spillStretch)
	}
	if err != nil {
		r.err = fmt.Errorf("ponens check: spill file: %w", err)
	}
}

// streamReferenceMin is the size from which a reference trace is checked
// as its events are decoded (streamReference) rather than decoded whole.
var streamReferenceMin int64 = 16 << 20

// referenceBatch is how many events of a reference trace go to the
// goroutine monitoring it at a time.
const referenceBatch = 256

// streamReference checks the reference trace at p as its events are
// decoded (tracefile.EachReferenceEvent), so that its events are not all
// held at once, when it is at least streamReferenceMin bytes or larger
// than trace.max_reference_bytes lets a trace be decoded whole: this
// goroutine decodes the events, a shard monitors the run, encodes its
// events and writes its spills. streamed is false when the trace is
// smaller, is an event stream, or its reading gave up part of the way (on
// anything the whole-file reader would report or read leniently); what
// was monitored is then dropped and the caller reads the file whole. A
// trace given up on that is too large to be read whole is refused here,
// saying why it was not read as it goes.
func streamReference(p string, lim tracefile.Limits, eng *monitor.Engine, pool *spillPool) (out []*liveRun, streamed bool, err error) {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return nil, false, nil
	}
	tooLarge := lim.MaxReferenceBytes > 0 && st.Size() > lim.MaxReferenceBytes
	if st.Size() < streamReferenceMin && !tooLarge {
		return nil, false, nil
	}
	sp, err := pool.get()
	if err != nil {
		return nil, false, err
	}
	defer pool.put(sp)
	sh := &shard{eng: eng, sp: sp, in: make(chan []shardEvent, 4)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sh.monitor(p)
	}()
	var r *liveRun
	var batch []shardEvent
	reference, streamed, err := tracefile.EachReferenceEvent(p, lim, func(ev *schema.Event) {
		if r == nil {
			r = &liveRun{checkedRun: checkedRun{File: p, RunID: ev.RunID, Outcome: schema.OutcomeCanceled}}
		}
		batch = append(batch, shardEvent{run: r, ev: ev})
		if len(batch) == referenceBatch {
			sh.in <- batch
			batch = nil
		}
	})
	if len(batch) > 0 {
		sh.in <- batch
	}
	close(sh.in)
	<-done
	switch {
	case err != nil:
		return nil, false, err
	case reference && !streamed && tooLarge:
		return nil, false, fmt.Errorf("%w; a clean reference trace this large is checked as it is read, but this one holds what only reading it whole reports or reads leniently (a warning, a problem, a repeated or escaped key): raise trace.max_reference_bytes to read it whole",
			&readlimit.TooLargeError{Path: p, Size: st.Size(), Limit: lim.MaxReferenceBytes, Key: "trace.max_reference_bytes"})
	case !streamed:
		return nil, false, nil
	}
	return []*liveRun{r}, true, nil // the run's first event, run.start, made r
}

// wholeFile reads the trace file at p whole (readTraces) and monitors its
// runs. release ends the hold on the collector that reading the file may
// leave (tracefile.File.Release), once the outputs are written.
func wholeFile(p string, lim tracefile.Limits, eng *monitor.Engine, notes io.Writer) (runs []*liveRun, release func(), err error) {
	f, err := tracefile.ReadFile(p, lim)
	if err != nil {
		return nil, nil, exitWith(exitBadInput, "%v", err)
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
	return out, f.Release, nil
}

// spill is a temporary file holding the JSON of the events read as a
// stream, as the summary's content hash takes them, run by run in chunks.
// What is written to it goes out in blocks on a goroutine of its own, so
// that the goroutine monitoring runs does not wait on the file system.
type spill struct {
	mu     sync.Mutex // a pool's spill files change hands
	f      *os.File
	block  []byte      // being filled
	off    int64       // where the next line goes
	full   chan []byte // blocks to write, in order
	free   chan []byte // written blocks, for reuse
	done   chan struct{}
	err    error // the first write error, once done is closed
	closed bool  // full is closed
}

// spillBlock is the size of the blocks a spill is written in.
const spillBlock = 256 << 10

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
	s := &spill{f: f, full: make(chan []byte, 2), free: make(chan []byte, 4), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for b := range s.full {
			if s.err == nil {
				_, s.err = f.Write(b)
			}
			select {
			case s.free <- b[:0]:
			default:
			}
		}
	}()
	return s, nil
}

// write appends line to the spill and records it in the run's chunks.
func (s *spill) write(line []byte, c *chunks) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.block != nil && len(s.block)+len(line) > cap(s.block) {
		s.full <- s.block
		s.block = nil
	}
	if s.block == nil {
		select {
		case s.block = <-s.free:
		default:
			s.block = make([]byte, 0, spillBlock)
		}
	}
	s.block = append(s.block, line...)
	c.add(s.off, int64(len(line)))
	s.off += int64(len(line))
	return nil
}

// flush writes out what is not yet written and waits for it; nothing is
// written after.
func (s *spill) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		if len(s.block) > 0 {
			s.full <- s.block
		}
		s.block, s.closed = nil, true
		close(s.full)
	}
	<-s.done
	return s.err
}

// reader returns a function reading the chunks in order, once the spill
// is flushed.
func (s *spill) reader(c chunks) func() io.Reader {
	return func() io.Reader { return &chunkReader{f: s.f, c: c} }
}

// chunkReader reads a run's stretches of a spill file. Copied with
// io.Copy, it reads each stretch straight into a buffer shared by all.
type chunkReader struct {
	f  *os.File
	c  chunks
	mr io.Reader // for Read
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.mr == nil {
		var rs []io.Reader
		r.c.each(func(off, n int64) { rs = append(rs, io.NewSectionReader(r.f, off, n)) })
		r.mr = io.MultiReader(rs...)
	}
	return r.mr.Read(p)
}

// copyBufs are the buffers chunkReader.WriteTo reads into.
var copyBufs = sync.Pool{New: func() any { return new([64 << 10]byte) }}

// WriteTo writes every stretch to w.
func (r *chunkReader) WriteTo(w io.Writer) (written int64, err error) {
	buf := copyBufs.Get().(*[64 << 10]byte)
	defer copyBufs.Put(buf)
	r.c.each(func(off, n int64) {
		for n > 0 && err == nil {
			k := int(min(n, int64(len(buf))))
			var m int
			if m, err = r.f.ReadAt(buf[:k], off); m == k {
				err = nil // io.EOF at the spill's end
			}
			if err != nil {
				return
			}
			if m, err = w.Write(buf[:m]); err != nil {
				return
			}
			written += int64(m)
			off, n = off+int64(m), n-int64(m)
		}
	})
	return written, err
}

// close removes the spill file.
func (s *spill) close() {
	s.flush()
	s.f.Close()
	os.Remove(s.f.Name())
}
