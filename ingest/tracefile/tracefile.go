package tracefile

import (
	"bytes"
	"os"

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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	events, err := schema.Decode(path, data, maxLine)
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
}

// ReadFile is Read that also reports the file's form and the warnings of a
// reference trace.
func ReadFile(path string, maxLine int) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	if !schema.IsReference(data) {
		events, err := schema.DecodeJSONL(path, bytes.NewReader(data), maxLine)
		return File{Runs: schema.SplitRuns(events)}, err
	}
	events, warnings, err := schema.DecodeReferenceWarn(path, data)
	return File{Runs: schema.SplitRuns(events), Warnings: warnings, Reference: true}, err
}
