package tracefile

import (
	"bytes"

	"github.com/ponens/ponens/internal/gcpause"
	"github.com/ponens/ponens/internal/readlimit"
	"github.com/ponens/ponens/schema"
)

// Read decodes the trace file at path, which errors name, and returns its
// runs in order of first appearance. maxLine limits the lines of an event
// stream (schema.DefaultMaxLine when <= 0).
//
// An unreadable file is an *os.PathError. A file with problems yields a
// schema.DecodeErrors listing them; the runs then hold the events that
// decoded cleanly (none for a reference trace), so a caller that must not
// act on a partial trace checks the error first.
func Read(path string, maxLine int) ([]schema.Run, error) {
	return ReadLimited(path, Limits{MaxLine: maxLine})
}

// Limits bounds what ReadLimited accepts; zero values mean no bound (and
// schema.DefaultMaxLine for MaxLine).
type Limits struct {
	MaxLine           int   // trace.max_event_bytes: a line of an event stream
	MaxFileBytes      int64 // trace.max_file_bytes: any trace file
	MaxReferenceBytes int64 // trace.max_reference_bytes: a reference trace, decoded whole
}

// ReadLimited is Read under limits: a file over MaxFileBytes is refused
// before reading past it, and a reference trace over MaxReferenceBytes
// before it is decoded, each with a *readlimit.TooLargeError naming the
// configuration key.
func ReadLimited(path string, l Limits) ([]schema.Run, error) {
	data, err := readlimit.ReadFile(path, l.MaxFileBytes, "trace.max_file_bytes")
	if err != nil {
		return nil, err
	}
	if l.MaxReferenceBytes > 0 && int64(len(data)) > l.MaxReferenceBytes && schema.IsReference(data) {
		return nil, &readlimit.TooLargeError{Path: path, Size: int64(len(data)), Limit: l.MaxReferenceBytes, Key: "trace.max_reference_bytes"}
	}
	events, err := schema.Decode(path, data, l.MaxLine)
	return schema.SplitRuns(events), err
}

// File is what ReadFile found in a trace file.
type File struct {
	Runs []schema.Run
	// Warnings are the values of a reference trace read leniently, each
	// naming its place and how it was read (schema.DecodeReferenceWarn).
	// An event stream has none.
	Warnings schema.DecodeErrors
	// Reference is set for a reference trace, clear for an event stream.
	Reference bool

	release func() // the collector's hold, for a reference trace read fast
}

// Release ends the hold on the garbage collector that reading a clean
// reference trace leaves in place (see ReadFile); call it when done with
// the runs. Release on any File, or more than once, is harmless.
func (f File) Release() {
	if f.release != nil {
		f.release()
	}
}

// ReadFile is ReadLimited that also reports the file's form and the
// warnings of a reference trace.
//
// The file is read, and a clean reference trace decoded, with the garbage
// collector held off (gcpause.Hold): the file's bytes (a regular file is
// read into one buffer of its size) and the decoded events are nearly all
// that reading and decoding allocate and they all stay, so collecting
// while it runs frees little and slows it. Once decoded, the hold becomes
// gcpause.HoldUntilDoubled, kept until the File is released: what reads
// the events next keeps little, and the first collection would mark
// every event. The holds are the process's: while they last, whatever
// else runs (another file read at the same time, say) runs without
// collection too, up to the bound once the decode is done. The first
// hold covers the fast reader's attempt, which on a trace with problems
// or warnings gives up, possibly near the end; the general reader then
// runs with the collector.
func ReadFile(path string, l Limits) (File, error) {
	reading := gcpause.Hold()
	defer reading()
	data, err := readlimit.ReadFile(path, l.MaxFileBytes, "trace.max_file_bytes")
	if err != nil {
		return File{}, err
	}
	if !schema.IsReference(data) {
		reading()
		events, err := schema.DecodeJSONL(path, bytes.NewReader(data), l.MaxLine)
		return File{Runs: schema.SplitRuns(events)}, err
	}
	if l.MaxReferenceBytes > 0 && int64(len(data)) > l.MaxReferenceBytes {
		return File{}, &readlimit.TooLargeError{Path: path, Size: int64(len(data)), Limit: l.MaxReferenceBytes, Key: "trace.max_reference_bytes"}
	}
	if events, ok := schema.DecodeReferenceFast(data); ok {
		// Taken before reading's hold ends, so that no collection starts between.
		return File{Runs: schema.SplitRuns(events), Reference: true, release: gcpause.HoldUntilDoubled()}, nil
	}
	reading()
	events, warnings, err := schema.DecodeReferenceGeneral(path, data)
	return File{Runs: schema.SplitRuns(events), Warnings: warnings, Reference: true}, err
}

// EachReferenceEvent reads the reference trace at path under l and hands
// its events to fn as it decodes them (schema.EachReferenceEvent), so that
// only the file's bytes and an index of its actions stay in memory.
// reference is false, and nothing is handed, when the file is not a
// reference trace (an event stream). ok is false when it is one but not
// clean (a trace with problems or warnings) or the reading gave up after
// handing some events: the caller drops what it did with them and reads
// the file with ReadFile, which says what is wrong. MaxFileBytes applies
// as in ReadFile; MaxReferenceBytes, which bounds a trace decoded whole,
// does not. While it reads, the collector runs more often than usual:
// marking the file's bytes costs nothing, and the heap stays near what is
// live.
func EachReferenceEvent(path string, l Limits, fn func(*schema.Event)) (reference, ok bool, err error) {
	data, err := readlimit.ReadFile(path, l.MaxFileBytes, "trace.max_file_bytes")
	if err != nil || !schema.IsReference(data) {
		return false, false, err
	}
	// data stays to the end, so the collector's usual headroom, a share of
	// the live heap, would be a share of the file (gcpause.Tighten).
	defer gcpause.Tighten(streamGCPercent)()
	return true, schema.EachReferenceEvent(data, fn), nil
}

// streamGCPercent is the collector's percentage while EachReferenceEvent
// reads a trace: the heap then grows to about 1.25 times the file's bytes
// and what is being checked, rather than twice.
const streamGCPercent = 25
