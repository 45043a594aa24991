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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	events, err := schema.Decode(path, data, maxLine)
	return schema.SplitRuns(events), err
}

// ReadWarn is Read that also returns the warnings of a reference trace:
// values read leniently, each naming its place and how it was read
// (schema.DecodeReferenceWarn). An event stream has none.
func ReadWarn(path string, maxLine int) ([]schema.Run, schema.DecodeErrors, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if schema.IsReference(data) {
		events, warnings, err := schema.DecodeReferenceWarn(path, data)
		return schema.SplitRuns(events), warnings, err
	}
	events, err := schema.Decode(path, data, maxLine)
	return schema.SplitRuns(events), nil, err
}
