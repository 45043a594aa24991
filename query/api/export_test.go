package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ponens/ponens/schema"
)

// cellText is an Arrow value as text: numbers in decimal, times as Unix
// milliseconds.
func cellText(t *testing.T, col arrow.Array, i int) string {
	t.Helper()
	switch a := col.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Timestamp:
		return strconv.FormatInt(a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UnixMilli(), 10)
	}
	t.Fatalf("column of type %s", col.DataType())
	return ""
}

// tableRows are the rows of record batches as text, with the column names.
func tableRows(t *testing.T, batches []arrow.RecordBatch) (names []string, rows [][]string) {
	t.Helper()
	for _, b := range batches {
		if names == nil {
			for _, f := range b.Schema().Fields() {
				names = append(names, f.Name)
			}
		}
		for i := range int(b.NumRows()) {
			row := make([]string, b.NumCols())
			for c := range row {
				row[c] = cellText(t, b.Column(c), i)
			}
			rows = append(rows, row)
		}
	}
	return names, rows
}

// sqlRows are the rows of an SQL query whose columns are all strings.
func sqlRows(t *testing.T, sql string) [][]string {
	t.Helper()
	out, err := engine.Query([]byte(sql), "JSONCompactEachRow")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r []string
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		rows = append(rows, r)
	}
	return rows
}

// The Arrow stream and the Parquet file of /v1/export read back with the
// arrow-go readers to the rows SQL gives for the same runs.
func TestExport(t *testing.T) {
	ts := newTestServer(t)
	eventCols := []string{"run_id", "seq", "ts", "type", "agent", "action_type", "target", "capability", "body", "stream_seq"}
	verdictCols := []string{"run_id", "rule_id", "seq", "ts", "status", "leaning", "mode", "rule_description", "rule_version", "cause_subformula", "cause_event", "stream_seq"}
	asText := func(cols []string) string {
		out := make([]string, len(cols))
		for i, c := range cols {
			out[i] = "toString(" + c + ")"
			if c == "ts" {
				out[i] = "toString(toUnixTimestamp64Milli(ts))"
			}
		}
		return strings.Join(out, ", ")
	}
	for _, c := range []struct {
		query  string
		cols   []string
		sql    string
		schema *arrow.Schema
	}{
		{"what=events", eventCols, "SELECT " + asText(eventCols) + " FROM events FINAL ORDER BY run_id, seq", schema.EventArrowSchema},
		{"what=verdicts&status=violated", verdictCols, "SELECT " + asText(verdictCols) + " FROM verdicts FINAL WHERE run_id = 'r1' ORDER BY run_id, stream_seq", schema.VerdictArrowSchema},
		{"what=events&run=r2&agent=coder-1", eventCols, "SELECT " + asText(eventCols) + " FROM events FINAL WHERE run_id = 'r2' ORDER BY seq", schema.EventArrowSchema},
	} {
		want := sqlRows(t, c.sql)
		for _, format := range []string{"arrow", "parquet"} {
			code, body := get(t, ts.URL+"/v1/export?"+c.query+"&format="+format)
			if code != 200 {
				t.Fatalf("%s %s: %d %s", c.query, format, code, body)
			}
			batches := readExport(t, format, body)
			sameSchema(t, c.query+" as "+format, batches[0].Schema(), c.schema)
			names, rows := tableRows(t, batches)
			if !reflect.DeepEqual(names, c.cols) || !reflect.DeepEqual(rows, want) {
				t.Errorf("%s as %s: columns %v\nrows %v\nwant %v", c.query, format, names, rows, want)
			}
		}
	}
	for q, want := range map[string]string{"what=runs": "parameter what", "what=events&format=csv": "parameter format", "what=events&status=bad": "parameter status"} {
		if code, body := get(t, ts.URL+"/v1/export?"+q); code != 400 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
}

// readExport reads an export's record batches with arrow-go: the IPC
// stream reader, or the Parquet file reader through pqarrow.
func readExport(t *testing.T, format string, body []byte) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	if format == "arrow" {
		rd, err := ipc.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Release()
		for rd.Next() {
			b := rd.RecordBatch()
			b.Retain()
			out = append(out, b)
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	for tr.Next() {
		b := tr.RecordBatch()
		b.Retain()
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Fatal(fmt.Sprintf("the Parquet file of %d bytes has no rows", len(body)))
	}
	return out
}

// sameSchema checks that an export's Arrow schema is the store's, field
// for field: names, order, types and nullability.
func sameSchema(t *testing.T, what string, got, want *arrow.Schema) {
	t.Helper()
	if got.NumFields() != want.NumFields() {
		t.Fatalf("%s: %d fields, the store's Arrow schema has %d:\n%s\nwant\n%s", what, got.NumFields(), want.NumFields(), got, want)
	}
	for i, f := range want.Fields() {
		if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) || g.Nullable != f.Nullable {
			t.Errorf("%s: field %d is %s, the store's Arrow schema has %s", what, i+1, g, f)
		}
	}
}
