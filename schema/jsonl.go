package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// DefaultMaxLine is the line limit, in bytes, that DecodeJSONL applies when
// it is given a limit <= 0.
const DefaultMaxLine = 1 << 20

// DecodeJSONL reads a stream of events, one JSON envelope per line, from r;
// name is the file name used in errors. Blank lines are skipped, and a line
// longer than maxLine bytes is an error (DefaultMaxLine when maxLine <= 0).
//
// Each line must decode as an Event with no member the envelope does not
// define (members of extra, payload and the other free-form fields are not
// checked) and pass Event.Validate. Runs may be interleaved; within a run,
// seq starts at 1 and increases by exactly one, and nothing follows a
// terminal event.
//
// DecodeJSONL returns the events that passed every check, in file order,
// and, when some did not, a DecodeErrors with every problem (up to 100)
// sorted by line and column.
func DecodeJSONL(name string, r io.Reader, maxLine int) ([]Event, error) {
	var events []Event
	err := ScanJSONL(name, r, maxLine, func(ev *Event) { events = append(events, *ev) })
	return events, err
}

// ScanJSONL is DecodeJSONL that hands each event that passed every check
// to fn, in file order, as soon as its line is read, instead of keeping
// them: memory does not grow with the stream, only with the number of its
// runs. fn must not keep ev, which is reused. The error is DecodeJSONL's.
func ScanJSONL(name string, r io.Reader, maxLine int, fn func(ev *Event)) error {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	sc := newLineChecker(name)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; !sc.errs.full(); n++ {
		var line []byte
		var tooLong bool
		var err error
		buf, line, tooLong, err = readLine(br, maxLine, buf[:0])
		if err != nil && err != io.EOF {
			sc.errs.add(n, 0, fmt.Errorf("read: %w", err))
			break
		}
		if !tooLong && isBlank(line) {
			if err == io.EOF {
				break
			}
			continue
		}
		var ev Event
		var problems []located
		if !tooLong {
			ev, problems = decodeEvent(line)
		}
		if sc.accept(n, line, tooLong, maxLine, &ev, problems) {
			fn(&ev)
		}
		if err == io.EOF {
			break
		}
	}
	return sc.errs.err()
}

// ScannedEvents is a batch of events ScanJSONLBatches read: Events in file
// order and, for each, Encoded[i], its AppendEventLine line (nil when
// encoding failed).
type ScannedEvents struct {
	Events  []Event
	Encoded [][]byte
}

// ScanJSONLBatches is ScanJSONL that reads ahead: one goroutine reads the
// lines, up to workers goroutines decode them (decoding is most of the
// cost of a line) and encode them again (AppendEventLine), and the events
// that passed every check are handed to fn in batches, in file order, on
// the calling goroutine. fn owns each batch. The events and the error are
// ScanJSONL's.
func ScanJSONLBatches(name string, r io.Reader, maxLine, workers int, fn func(b ScannedEvents)) error {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	workers = max(workers, 1)
	sc := newLineChecker(name)
	ordered := make(chan *lineBatch, 2*workers)
	work := make(chan *lineBatch, 2*workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(ordered)
		readBatches(bufio.NewReaderSize(r, 256<<10), maxLine, ordered, work, stop)
	}()
	for range workers {
		go func() {
			defer wg.Done()
			for b := range work {
				b.decode()
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)
	for b := range ordered {
		<-b.done
		// The events accepted are moved to the front of the batch's own
		// slices, which fn then owns.
		out := ScannedEvents{Events: b.evs[:0], Encoded: b.encoded[:0]}
		for i := range b.lines {
			if sc.errs.full() {
				break
			}
			n := b.first + i
			if b.blank[i] {
				continue
			}
			if sc.accept(n, b.lines[i], b.tooLong[i], maxLine, &b.evs[i], b.problems[i]) {
				out.Events = append(out.Events, b.evs[i])
				out.Encoded = append(out.Encoded, b.encoded[i])
			}
		}
		if len(out.Events) > 0 {
			fn(out)
		}
		if b.readErr != nil && !sc.errs.full() {
			sc.errs.add(b.first+len(b.lines), 0, fmt.Errorf("read: %w", b.readErr))
		}
		if sc.errs.full() || b.readErr != nil {
			break
		}
	}
	return sc.errs.err()
}

// lineBatch is a stretch of consecutive lines of a stream, read by
// readBatches and decoded by decode.
type lineBatch struct {
	first    int // the line number of lines[0]
	lines    [][]byte
	tooLong  []bool // the line is over the limit (and not held)
	readErr  error  // reading failed after the last line
	blank    []bool
	evs      []Event
	problems [][]located
	encoded  [][]byte      // AppendEventLine of evs, when decoded
	done     chan struct{} // closed when decoded
}

// Sizes of a lineBatch: enough lines that handing them from goroutine to
// goroutine costs little per line.
const (
	batchLines = 512
	batchBytes = 256 << 10
)

// readBatches reads the lines of br in batches, sending each to ordered
// (in order) and to work (to be decoded), until the end of the stream, a
// read error or stop.
func readBatches(br *bufio.Reader, maxLine int, ordered, work chan<- *lineBatch, stop <-chan struct{}) {
	used := batchBytes // bytes the last batch's lines took
	for n := 1; ; {
		b := &lineBatch{first: n, done: make(chan struct{})}
		// Sized for lines like the last batch's: a buffer that fills up
		// grows, the lines already read staying where they are.
		buf := make([]byte, 0, min(batchBytes, used+used/8)+4096)
		eof := false
		for len(b.lines) < batchLines && len(buf) < batchBytes {
			var line []byte
			var tooLong bool
			var err error
			start := len(buf)
			buf, line, tooLong, err = readLine(br, maxLine, buf)
			if err != nil && err != io.EOF {
				b.readErr = err
				buf = buf[:start]
				break
			}
			if tooLong {
				line = nil
			}
			b.lines, b.tooLong = append(b.lines, line), append(b.tooLong, tooLong)
			n++
			if err == io.EOF {
				eof = true
				break
			}
		}
		used = len(buf)
		select {
		case ordered <- b:
		case <-stop:
			return
		}
		select {
		case work <- b:
		case <-stop:
			return
		}
		if eof || b.readErr != nil {
			return
		}
	}
}

// decode decodes, validates and encodes again every line of the batch.
func (b *lineBatch) decode() {
	b.blank = make([]bool, len(b.lines))
	b.evs = make([]Event, len(b.lines))
	b.problems = make([][]located, len(b.lines))
	b.encoded = make([][]byte, len(b.lines))
	var enc []byte
	size := 0 // of the lines: an event's line encoded again is about as long
	for _, line := range b.lines {
		size += len(line)
	}
	strs := make(map[string]string)
	for i, line := range b.lines {
		if b.tooLong[i] {
			continue
		}
		if isBlank(line) {
			b.blank[i] = true
			continue
		}
		b.evs[i], b.problems[i] = decodeEventShared(line, strs)
		if len(b.problems[i]) == 0 {
			if enc == nil {
				enc = make([]byte, 0, size+size/8+1024)
			}
			start := len(enc)
			var err error
			if enc, err = AppendEventLine(enc, &b.evs[i]); err == nil {
				b.encoded[i] = enc[start:len(enc):len(enc)]
			} else {
				enc = enc[:start]
			}
		}
	}
	close(b.done)
}

// lineChecker is what a scan remembers from line to line: each run's
// order and the problems so far.
type lineChecker struct {
	errs errorList
	runs map[string]*runOrder
}

func newLineChecker(name string) *lineChecker {
	return &lineChecker{errs: errorList{file: name}, runs: make(map[string]*runOrder)}
}

// accept records the problems of line n (decoded as ev with problems, or
// too long) and checks ev's place in its run. It reports whether ev
// passed every check.
func (c *lineChecker) accept(n int, line []byte, tooLong bool, maxLine int, ev *Event, problems []located) bool {
	if tooLong {
		c.errs.add(n, 0, &FieldError{Err: ErrTooLarge, Expected: fmt.Sprintf("a line of at most %d bytes", maxLine)})
		return false
	}
	if len(problems) == 0 {
		st := c.runs[ev.RunID]
		if st == nil {
			st = &runOrder{}
			c.runs[ev.RunID] = st
		}
		if fe := st.next(ev, n); fe != nil {
			problems = []located{{locate(line, fe.Field)[0], fe}}
		}
	}
	for _, p := range problems {
		c.errs.add(n, p.off+1, p.err)
	}
	return len(problems) == 0
}

// isBlank reports whether line holds only white space.
func isBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// readLine appends one line, without its end-of-line bytes, to buf and
// returns it as line (buf[len(buf):] before the call). It reports a line
// longer than max bytes as tooLong, consuming it but not returning it, and
// returns io.EOF with the last line.
func readLine(br *bufio.Reader, max int, buf []byte) (out, line []byte, tooLong bool, err error) {
	start := len(buf)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)-start+len(chunk) <= max+2 { // room for "\r\n"
			buf = append(buf, chunk...)
		} else {
			tooLong = true
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(buf[start:], []byte("\n")), []byte("\r"))
		if tooLong || len(line) > max {
			return buf[:start], nil, true, err
		}
		return buf[:start+len(line)], line, false, err
	}
}

var eventType = reflect.TypeFor[Event]()

// decodeEvent decodes and validates one line. The problems carry byte
// offsets within the line.
func decodeEvent(line []byte) (Event, []located) { return decodeEventShared(line, nil) }

// decodeEventShared is decodeEvent sharing short strings between events
// through strs (see eventFast), when it is not nil.
func decodeEventShared(line []byte, strs map[string]string) (Event, []located) {
	ev, maybeDup, ok := decodeEventFast(line, strs)
	if !ok {
		ev, maybeDup, ok = decodeFast(line)
	}
	if ok {
		if ev.Validate() == nil {
			if maybeDup {
				if dup := checkDuplicateKeys(line); dup != nil {
					return Event{}, dup
				}
			}
			return ev, nil
		}
	}
	ev = Event{}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&ev)
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		off := int(dec.InputOffset())
		if rest := bytes.TrimLeft(line[off:], " \t\r"); len(rest) > 0 {
			return ev, []located{{len(line) - len(rest), &FieldError{Err: ErrMalformedJSON, Got: "unexpected data after the event"}}}
		}
		if dup := checkDuplicateKeys(line); dup != nil {
			return Event{}, dup
		}
		if err := ev.Validate(); err != nil {
			var fe *FieldError
			errors.As(err, &fe)
			return ev, []located{{locate(line, fe.Field)[0], fe}}
		}
		return ev, nil
	case errors.As(err, &syntax):
		return ev, []located{{int(syntax.Offset) - 1, &FieldError{Err: ErrMalformedJSON, Got: syntax.Error()}}}
	case err == io.ErrUnexpectedEOF:
		return ev, []located{{len(line), &FieldError{Err: ErrMalformedJSON, Got: "unexpected end of line"}}}
	}
	if problems := diagnose(line, eventType); len(problems) > 0 {
		return ev, problems
	}
	return ev, []located{{0, &FieldError{Err: ErrWrongType, Got: err.Error()}}}
}

// decodeFast decodes an event that is well-formed JSON with only known
// fields, using segmentio/encoding's decoder: 2.5 times faster than
// encoding/json on the events of a load, with half the allocations, and the
// same results (FuzzDecodeFast checks both on every input). ok is false
// for anything else; decodeEvent then decodes again with encoding/json,
// whose errors it can place on a line, column and field. maybeDup is
// scanShape's: whether an object of the line may have a key twice, which
// checkDuplicateKeys then decides.
func decodeFast(line []byte) (ev Event, maybeDup, ok bool) {
	deep, maybeDup := scanShape(line)
	if deep {
		return Event{}, false, false
	}
	var f fastEvent
	rest, err := segjson.Parse(line, &f, segjson.DisallowUnknownFields)
	if err != nil || len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
		return Event{}, false, false
	}
	return Event{V: f.V, RunID: f.RunID, Seq: f.Seq, TS: f.TS.Time, Type: f.Type, Start: f.Start, End: f.End,
		Action: f.Action, Artifact: f.Artifact, Residual: f.Residual, Telemetry: f.Telemetry}, maybeDup, true
}

// maxDepth is encoding/json's limit on nesting, which segmentio/encoding
// does not have: deeper input is left to encoding/json to refuse (an event
// accepted here must also encode again, as the cause of a verdict).
const maxDepth = 10000

// fastEvent is Event with a timestamp that decodes as encoding/json decodes
// a time.Time (segmentio/encoding reads more ISO 8601 forms than RFC 3339).
// TestFastEventMirrorsEvent keeps the two in step.
type fastEvent struct {
	V     int        `json:"v"`
	RunID string     `json:"runId"`
	Seq   uint64     `json:"seq"`
	TS    strictTime `json:"ts"`
	Type  EventType  `json:"type"`

	Start     *RunStart       `json:"start,omitempty"`
	End       *RunEnd         `json:"end,omitempty"`
	Action    *Action         `json:"action,omitempty"`
	Artifact  *Artifact       `json:"artifact,omitempty"`
	Residual  *Artifact       `json:"residual,omitempty"`
	Telemetry json.RawMessage `json:"telemetry,omitempty"`
}

// strictTime unmarshals with time.Time's own UnmarshalJSON, as
// encoding/json does.
type strictTime struct{ time.Time }

func (t *strictTime) UnmarshalJSON(data []byte) error { return t.Time.UnmarshalJSON(data) }

// runOrder is what DecodeJSONL remembers of a run to check its order.
type runOrder struct {
	last    uint64    // the last accepted seq
	endLine int       // the line of the terminal event, or 0
	endType EventType // the type of the terminal event
}

// next checks that ev, at line n, may follow the events accepted so far,
// and records it. After a gap the run continues from ev's seq, so that one
// gap is one problem.
func (r *runOrder) next(ev *Event, n int) *FieldError {
	want := strconv.FormatUint(r.last+1, 10)
	got := strconv.FormatUint(ev.Seq, 10)
	switch {
	case r.endLine > 0:
		return &FieldError{Field: "runId", Err: ErrAfterEnd, Expected: fmt.Sprintf("no event after the %s at line %d", r.endType, r.endLine), Got: "seq " + got}
	case ev.Seq <= r.last:
		return &FieldError{Field: "seq", Err: ErrSeqRepeat, Expected: want, Got: got}
	case ev.Seq > r.last+1:
		r.last = ev.Seq
		return &FieldError{Field: "seq", Err: ErrSeqGap, Expected: want, Got: got}
	}
	r.last = ev.Seq
	if ev.Type.IsTerminal() {
		r.endLine, r.endType = n, ev.Type
	}
	return nil
}
