package api

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ponens/ponens/schema"
)

// exportSchemas are the Arrow schemas of each kind of export: the store's
// own (schema.EventArrowSchema, schema.VerdictArrowSchema), field for field.
var exportSchemas = map[string]*arrow.Schema{"events": schema.EventArrowSchema, "verdicts": schema.VerdictArrowSchema}

// exportColumns is the select list giving the columns of sc, in its order,
// each cast in SQL to the type its field has.
func exportColumns(sc *arrow.Schema) string {
	cols := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		switch f.Type.ID() {
		case arrow.UINT64:
			cols[i] = fmt.Sprintf("toUInt64(%s) AS %[1]s", f.Name)
		case arrow.TIMESTAMP:
			cols[i] = fmt.Sprintf("toDateTime64(%s, 3, 'UTC') AS %[1]s", f.Name)
		default:
			cols[i] = fmt.Sprintf("toString(%s) AS %[1]s", f.Name)
		}
	}
	return strings.Join(cols, ", ")
}

// exportTypes are the content types and file extensions of the formats.
var exportTypes = map[string][2]string{"arrow": {"application/vnd.apache.arrow.stream", ".arrow"}, "parquet": {"application/vnd.apache.parquet", ".parquet"}}

// exportOrder is each export's row order.
var exportOrder = map[string]string{"events": "run_id, seq", "verdicts": "run_id, stream_seq, rule_id"}

// ExportOptions are a selection of runs (as /v1/runs takes it), what to
// export (events or verdicts) and the format (arrow or parquet).
type ExportOptions struct {
	Selection
	What, Format string
}

// exportStmt is the statement of an export: the rows of o.What of the runs
// o selects, as an Arrow stream.
func exportStmt(o ExportOptions) *stmt {
	runs := runsStmt(o.Selection, nil, 0)
	st := newStmt("SELECT " + exportColumns(exportSchemas[o.What]) + " FROM " + o.What + " FINAL WHERE run_id IN (SELECT runId FROM (")
	st.sql(runs.b.String())
	st.params = runs.params
	st.sql(")) ORDER BY " + exportOrder[o.What] + " SETTINGS output_format_arrow_string_as_string = 1") // a String as utf8, not binary, whatever the server's default
	return st
}

// Export returns the rows of o.What of the selected runs as an Arrow IPC
// stream (format arrow) or a Parquet file (format parquet, written from
// the same Arrow records with pqarrow, Zstandard-compressed), both with the
// store's Arrow schema of o.What.
func (s *Server) Export(ctx context.Context, o ExportOptions) ([]byte, error) {
	stream, err := exportStmt(o).run(ctx, s.store, "ArrowStream")
	if err != nil {
		return nil, storeError(err)
	}
	sc := exportSchemas[o.What]
	rd, err := ipc.NewReader(bytes.NewReader(stream), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("export: reading the store's Arrow stream: %w", err)
	}
	defer rd.Release()
	if err := sameColumns(rd.Schema(), sc); err != nil {
		return nil, fmt.Errorf("export of %s: %w", o.What, err)
	}
	var out bytes.Buffer
	w, err := newExportWriter(o.Format, sc, &out)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	for rd.Next() {
		rec := rd.RecordBatch()
		typed := array.NewRecordBatch(sc, rec.Columns(), rec.NumRows())
		err := w.write(typed)
		typed.Release()
		if err != nil {
			return nil, fmt.Errorf("export: writing %s: %w", o.Format, err)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("export: reading the store's Arrow stream: %w", err)
	}
	if err := w.close(); err != nil {
		return nil, fmt.Errorf("export: writing %s: %w", o.Format, err)
	}
	return out.Bytes(), nil
}

// sameColumns checks that the store's stream has the columns of sc, in its
// order and of its types.
func sameColumns(got, sc *arrow.Schema) error {
	if got.NumFields() != sc.NumFields() {
		return fmt.Errorf("the store gave %d columns, the schema has %d", got.NumFields(), sc.NumFields())
	}
	for i, f := range sc.Fields() {
		if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return fmt.Errorf("column %d: the store gave %s %s, the schema has %s %s", i+1, g.Name, g.Type, f.Name, f.Type)
		}
	}
	return nil
}

// exportWriter writes record batches of one schema as an export format.
type exportWriter struct {
	write func(arrow.RecordBatch) error
	close func() error
}

// newExportWriter writes format (arrow: an IPC stream; parquet: a
// Zstandard-compressed Parquet file storing the Arrow schema) to out.
func newExportWriter(format string, sc *arrow.Schema, out *bytes.Buffer) (*exportWriter, error) {
	if format == "arrow" {
		w := ipc.NewWriter(out, ipc.WithSchema(sc))
		return &exportWriter{write: w.Write, close: w.Close}, nil
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	w, err := pqarrow.NewFileWriter(sc, out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	return &exportWriter{write: w.WriteBuffered, close: w.Close}, nil
}
