package schema

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DeadLetter is a stored dead letter: what was refused, where and why,
// as the DEADLETTER stream holds it (its headers and body).
type DeadLetter struct {
	Subject, Reason, Source, Error string
	Body                           []byte
	// Truncated is the size of an input kept only in part (0: whole).
	Truncated uint64
}

// DeadLetterArrowSchema is the Arrow form of a stored dead letter: the
// columns of the dead_letters table, in its order.
var DeadLetterArrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "stream_seq", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "ts", Type: tsType},
	{Name: "subject", Type: arrow.BinaryTypes.String},
	{Name: "reason", Type: arrow.BinaryTypes.String},
	{Name: "source", Type: arrow.BinaryTypes.String},
	{Name: "error", Type: arrow.BinaryTypes.String},
	{Name: "body", Type: arrow.BinaryTypes.String},
	{Name: "truncated", Type: arrow.PrimitiveTypes.Uint64},
}, nil)

// RuleVersionRow is one meaning of a rule as the rule_versions table holds
// it: the rule's id in its file, its version number, and what it was.
type RuleVersionRow struct {
	RuleID, Version, Description, Mode, Text, Formula, TextHash string
	// Since is when the version was first put in force.
	Since time.Time
}

// RuleVersionArrowSchema is the Arrow form of a rule version: the columns
// of the rule_versions table, in its order.
var RuleVersionArrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "rule_id", Type: arrow.BinaryTypes.String},
	{Name: "version", Type: arrow.BinaryTypes.String},
	{Name: "description", Type: arrow.BinaryTypes.String},
	{Name: "mode", Type: arrow.BinaryTypes.String},
	{Name: "text", Type: arrow.BinaryTypes.String},
	{Name: "formula", Type: arrow.BinaryTypes.String},
	{Name: "text_hash", Type: arrow.BinaryTypes.String},
	{Name: "seen_at", Type: tsType},
}, nil)

// RecordBatch builds an Arrow record batch of one of the schemas above. It
// is not safe for concurrent use.
type RecordBatch struct {
	b *array.RecordBuilder
}

// NewDeadLetterBatch returns an empty batch of dead letters allocating
// from mem (nil: the Go allocator).
func NewDeadLetterBatch(mem memory.Allocator) *RecordBatch {
	return newRecordBatch(mem, DeadLetterArrowSchema)
}

// NewRuleVersionBatch returns an empty batch of rule versions allocating
// from mem (nil: the Go allocator).
func NewRuleVersionBatch(mem memory.Allocator) *RecordBatch {
	return newRecordBatch(mem, RuleVersionArrowSchema)
}

func newRecordBatch(mem memory.Allocator, sc *arrow.Schema) *RecordBatch {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &RecordBatch{b: array.NewRecordBuilder(mem, sc)}
}

// AppendDeadLetter adds d, read from the DEADLETTER stream at m.
func (rb *RecordBatch) AppendDeadLetter(d *DeadLetter, m StreamMeta) {
	f := rb.b.Fields()
	f[0].(*array.Uint64Builder).Append(m.Seq)
	f[1].(*array.TimestampBuilder).Append(arrow.Timestamp(m.Time.UnixMilli()))
	f[2].(*array.StringBuilder).Append(d.Subject)
	f[3].(*array.StringBuilder).Append(d.Reason)
	f[4].(*array.StringBuilder).Append(d.Source)
	f[5].(*array.StringBuilder).Append(d.Error)
	f[6].(*array.StringBuilder).BinaryBuilder.Append(d.Body)
	f[7].(*array.Uint64Builder).Append(d.Truncated)
}

// AppendRuleVersion adds r.
func (rb *RecordBatch) AppendRuleVersion(r *RuleVersionRow) {
	f := rb.b.Fields()
	for i, s := range []string{r.RuleID, r.Version, r.Description, r.Mode, r.Text, r.Formula, r.TextHash} {
		f[i].(*array.StringBuilder).Append(s)
	}
	f[7].(*array.TimestampBuilder).Append(arrow.Timestamp(r.Since.UnixMilli()))
}

// Len is the number of rows appended since the last Record.
func (rb *RecordBatch) Len() int { return rb.b.Field(0).Len() }

// Record returns the rows appended so far as a record batch (the caller
// releases it) and empties the batch.
func (rb *RecordBatch) Record() arrow.RecordBatch { return rb.b.NewRecordBatch() }

// RecordEntryRow is one record entry as the record_entries table holds it:
// what one result artifact of a run established about a symbol.
type RecordEntryRow struct {
	Symbol, File, RunID, Ref, Kind, Grade string
	// Established is when the entry was made (zero when its trace does
	// not say, stored as 1970-01-01).
	Established time.Time
	// SourceHash is the "file@hash" the entry was derived from ("" when
	// none was recorded).
	SourceHash string
	// Regions is the regions of a decomposition; Gaps the open residuals
	// about the entry or its symbol.
	Regions, Gaps uint32
	Superseded    bool
	// Stored is when the row was written: of two rows of one key, the
	// later stands.
	Stored time.Time
}

// RecordEntryArrowSchema is the Arrow form of a record entry: the columns
// of the record_entries table, in its order.
var RecordEntryArrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "symbol", Type: arrow.BinaryTypes.String},
	{Name: "file", Type: arrow.BinaryTypes.String},
	{Name: "run_id", Type: arrow.BinaryTypes.String},
	{Name: "ref", Type: arrow.BinaryTypes.String},
	{Name: "kind", Type: arrow.BinaryTypes.String},
	{Name: "grade", Type: arrow.BinaryTypes.String},
	{Name: "established_at", Type: tsType},
	{Name: "source_hash", Type: arrow.BinaryTypes.String},
	{Name: "regions", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "gaps", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "superseded", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "stored_at", Type: tsType},
}, nil)

// NewRecordEntryBatch returns an empty batch of record entries allocating
// from mem (nil: the Go allocator).
func NewRecordEntryBatch(mem memory.Allocator) *RecordBatch {
	return newRecordBatch(mem, RecordEntryArrowSchema)
}

// AppendRecordEntry adds r.
func (rb *RecordBatch) AppendRecordEntry(r *RecordEntryRow) {
	f := rb.b.Fields()
	for i, s := range []string{r.Symbol, r.File, r.RunID, r.Ref, r.Kind, r.Grade} {
		f[i].(*array.StringBuilder).Append(s)
	}
	var established int64 // 1970-01-01 when the trace does not say
	if !r.Established.IsZero() {
		established = r.Established.UnixMilli()
	}
	f[6].(*array.TimestampBuilder).Append(arrow.Timestamp(established))
	f[7].(*array.StringBuilder).Append(r.SourceHash)
	f[8].(*array.Uint32Builder).Append(r.Regions)
	f[9].(*array.Uint32Builder).Append(r.Gaps)
	f[10].(*array.BooleanBuilder).Append(r.Superseded)
	f[11].(*array.TimestampBuilder).Append(arrow.Timestamp(r.Stored.UnixMilli()))
}
