package analytics

import (
	"fmt"
	"strings"

	"github.com/ponens/ponens/sink/chdb"
)

// Formats maps each output format a user may ask for to ClickHouse's.
var Formats = map[string]string{
	"table": "PrettyCompactMonoBlock",
	"json":  "JSONEachRow",
	"csv":   "CSVWithNames",
}

// FormatNames lists the names of Formats, for help and errors.
const FormatNames = "table, json or csv"

// Open opens the embedded store read-only for queries: it migrates the
// schema, then makes the session read-only.
func Open(opts chdb.Options) (*chdb.Engine, error) {
	e, err := chdb.Open(opts)
	if err != nil {
		return nil, err
	}
	if _, err := chdb.Migrate(e); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.Exec("SET output_format_pretty_color = 0", "SET readonly = 2"); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Query runs sql on e, opened with Open, and returns the answer in format
// (a key of Formats).
func Query(e *chdb.Engine, sql, format string) ([]byte, error) {
	f, ok := Formats[format]
	if !ok {
		return nil, fmt.Errorf("--format: must be %s, got %q", FormatNames, format)
	}
	sql = strings.TrimSpace(sql)
	if sql == "" {
		return nil, fmt.Errorf("no SQL given")
	}
	return e.Query([]byte(sql), f)
}
