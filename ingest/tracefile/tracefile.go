// Package tracefile reads trace files from disk: JSONL event files and
// reference trace JSON files, told apart by their content (schema.Decode).
package tracefile

import (
	"os"

	"github.com/ponens/ponens/schema"
)

// Read reads the trace file at path and returns its runs in order of first
// appearance. maxLine bounds one JSONL line (0 for the default). Errors name
// the file, line, column and field.
func Read(path string, maxLine int) ([]schema.Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	events, err := schema.Decode(path, data, maxLine)
	if err != nil {
		return nil, err
	}
	return schema.SplitRuns(events), nil
}
