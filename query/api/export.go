package api

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// exportColumns are the columns of each kind of export, in order, as the
// Arrow schema names them.
var exportColumns = map[string]string{
	"events": `run_id, seq, ts, toString(type) AS type, toString(agent) AS agent, toString(action_type) AS action_type, target,
  toString(capability) AS capability, body, stream_seq`,
	"verdicts": `run_id, toString(rule_id) AS rule_id, seq, ts, toString(status) AS status, toString(leaning) AS leaning, toString(mode) AS mode,
  toString(rule_description) AS rule_description, cause_subformula, cause_event, stream_seq`,
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
	st := newStmt("SELECT " + exportColumns[o.What] + " FROM " + o.What + " FINAL WHERE run_id IN (SELECT runId FROM (")
	st.sql(runs.b.String())
	st.params = runs.params
	st.sql(")) ORDER BY " + exportOrder[o.What] + " SETTINGS output_format_arrow_string_as_string = 1") // a String as utf8, not binary, whatever the server's default
	return st
}

// Export returns the rows of o.What of the selected runs as an Arrow IPC
// stream (format arrow) or a Parquet file (format parquet, written from
// the same Arrow records with pqarrow, Zstandard-compressed).
func (s *Server) Export(ctx context.Context, o ExportOptions) ([]byte, error) {
	stream, err := exportStmt(o).run(ctx, s.store, "ArrowStream")
	if err != nil {
		return nil, storeError(err)
	}
	if o.Format == "arrow" {
		return stream, nil
	}
	return arrowToParquet(stream)
}

// arrowToParquet rewrites an Arrow IPC stream as a Parquet file.
func arrowToParquet(stream []byte) ([]byte, error) {
	rd, err := ipc.NewReader(bytes.NewReader(stream), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("export: reading the store's Arrow stream: %w", err)
	}
	defer rd.Release()
	var out bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	w, err := pqarrow.NewFileWriter(rd.Schema(), &out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	for rd.Next() {
		if err := w.WriteBuffered(rd.RecordBatch()); err != nil {
			return nil, fmt.Errorf("export: writing Parquet: %w", err)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("export: reading the store's Arrow stream: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("export: writing Parquet: %w", err)
	}
	return out.Bytes(), nil
}
