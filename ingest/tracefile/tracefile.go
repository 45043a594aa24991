package tracefile

import (
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
	runs, _, err := ReadForm(path, maxLine)
	return runs, err
}

// ReadForm is Read that also reports whether the file is a reference
// trace (whose event times are derived, not recorded) rather than an event
// stream.
func ReadForm(path string, maxLine int) (runs []schema.Run, reference bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	events, err := schema.Decode(path, data, maxLine)
	return schema.SplitRuns(events), schema.IsReference(data), err
}
