package schema

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The sentinel errors. Every error this package returns wraps exactly one of
// them (through a *FieldError, a *DecodeError or both), so callers classify a
// problem with errors.Is and find where it is with errors.As.
var (
	// ErrMalformedJSON: the input is not well-formed JSON.
	ErrMalformedJSON = errors.New("malformed JSON")
	// ErrUnknownField: an object has a member the format does not define.
	ErrUnknownField = errors.New("unknown field")
	// ErrUnexpectedField: a body field that does not go with the event type.
	ErrUnexpectedField = errors.New("unexpected field")
	// ErrWrongType: a value has the wrong JSON type (a string for a number, …).
	ErrWrongType = errors.New("wrong type")
	// ErrMissingField: a required field is absent or empty.
	ErrMissingField = errors.New("missing field")
	// ErrInvalidValue: a value has the right type but is not allowed.
	ErrInvalidValue = errors.New("invalid value")
	// ErrUnknownType: an event type this build does not know.
	ErrUnknownType = errors.New("unknown event type")
	// ErrUnsupportedVersion: an envelope version or formatVersion this build
	// does not support.
	ErrUnsupportedVersion = errors.New("unsupported version")
	// ErrTooLarge: a line or a value exceeds its size limit.
	ErrTooLarge = errors.New("too large")
	// ErrSeqGap: a run's seq skipped a number.
	ErrSeqGap = errors.New("seq gap")
	// ErrSeqRepeat: a run's seq did not increase (a repeat or a step back).
	ErrSeqRepeat = errors.New("seq repeated")
	// ErrAfterEnd: an event of a run that a terminal event already closed.
	ErrAfterEnd = errors.New("event after end of run")
	// ErrDuplicateKey: an object has the same key twice.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrConflictingDuplicate: an event with the run and seq of one already
	// stored, but other content.
	ErrConflictingDuplicate = errors.New("conflicting duplicate")
	// ErrMixedRuns: events of more than one run where one run is expected.
	ErrMixedRuns = errors.New("more than one run")
	// ErrTooManyErrors: the input has more problems than are reported.
	ErrTooManyErrors = errors.New("too many errors")
)

// maxErrors is how many problems a decoder reports for one input before it
// gives up with ErrTooManyErrors.
const maxErrors = 100

// FieldError is a problem with one field of a JSON document. Field is a
// path such as "action.evidence[0].ref" ("" for the whole document); Err is
// the sentinel that classifies the problem.
type FieldError struct {
	Field    string
	Expected string // what the field should hold, e.g. "a non-empty string"
	Got      string // what it holds, as JSON text or a short description
	Err      error
}

// Error renders "field: sentinel: expected E, got G", leaving out empty parts.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.message()
	}
	return e.Field + ": " + e.message()
}

// message is the error without the field path.
func (e *FieldError) message() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	got := cutGot(e.Got)
	if e.Expected != "" {
		b.WriteString(": expected " + e.Expected)
		if got != "" {
			b.WriteString(", got " + got)
		}
	} else if got != "" {
		b.WriteString(": " + got)
	}
	return b.String()
}

// maxGot is the most of a FieldError's Got its message shows: Got often
// quotes the input, which may be megabytes.
const maxGot = 200

// cutGot returns got, or its first maxGot bytes (at a rune boundary) and
// how many were left out.
func cutGot(got string) string {
	if len(got) <= maxGot {
		return got
	}
	end := maxGot
	for end > 0 && !utf8.RuneStart(got[end]) {
		end--
	}
	return got[:end] + "… (" + strconv.Itoa(len(got)-end) + " more bytes)"
}

// Unwrap returns the sentinel.
func (e *FieldError) Unwrap() error { return e.Err }

// DecodeError locates a problem in an input file. Line and Col are 1-based
// (Col counts bytes); zero means unknown. Err is the *FieldError or sentinel
// behind it.
type DecodeError struct {
	File  string
	Line  int
	Col   int
	Field string
	Msg   string
	Err   error
}

// Error renders "file:line:col: field: message", leaving out empty parts.
func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteString(":" + strconv.Itoa(e.Col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// newDecodeError locates err (a *FieldError or a sentinel) in file.
func newDecodeError(file string, line, col int, err error) *DecodeError {
	d := &DecodeError{File: file, Line: line, Col: col, Msg: err.Error(), Err: err}
	if fe, ok := err.(*FieldError); ok {
		d.Field, d.Msg = fe.Field, fe.message()
	}
	return d
}

// DecodeErrors is every problem found in one input, sorted by position.
type DecodeErrors []*DecodeError

// Error renders one problem per line.
func (es DecodeErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As see every problem.
func (es DecodeErrors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// errorList collects the problems of one input, up to maxErrors.
type errorList struct {
	file string
	errs DecodeErrors
}

// add records err at line:col; past maxErrors it records that it stopped.
func (l *errorList) add(line, col int, err error) {
	switch {
	case len(l.errs) < maxErrors:
		l.errs = append(l.errs, newDecodeError(l.file, line, col, err))
	case len(l.errs) == maxErrors:
		l.errs = append(l.errs, newDecodeError(l.file, line, 0,
			&FieldError{Err: ErrTooManyErrors, Got: "stopped after " + strconv.Itoa(maxErrors)}))
	}
}

// full reports whether no more problems will be recorded.
func (l *errorList) full() bool { return len(l.errs) > maxErrors }

// err returns the problems sorted by position, or nil when there are none.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(l.errs[:min(len(l.errs), maxErrors)], func(a, b *DecodeError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return l.errs
}
