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
