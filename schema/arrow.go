package schema

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// StreamMeta is where a record sits on its stream: the message's stream
// sequence and the time the stream stored it. Stored rows are keyed by
// their record and versioned by Seq, so a replayed message replaces its row.
type StreamMeta struct {
	Seq  uint64
	Time time.Time
}

var tsType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// VerdictArrowSchema is the Arrow form of a stored verdict: the columns of
// the verdicts table, in its order.
var VerdictArrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "run_id", Type: arrow.BinaryTypes.String},
	{Name: "rule_id", Type: arrow.BinaryTypes.String},
	{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "ts", Type: tsType},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "leaning", Type: arrow.BinaryTypes.String},
	{Name: "mode", Type: arrow.BinaryTypes.String},
	{Name: "rule_description", Type: arrow.BinaryTypes.String},
	{Name: "rule_version", Type: arrow.BinaryTypes.String},
	{Name: "cause_subformula", Type: arrow.BinaryTypes.String},
	{Name: "cause_event", Type: arrow.BinaryTypes.String},
	{Name: "stream_seq", Type: arrow.PrimitiveTypes.Uint64},
}, nil)

// EventArrowSchema is the Arrow form of a stored trace event: the columns
// of the events table, in its order.
var EventArrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "run_id", Type: arrow.BinaryTypes.String},
	{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "ts", Type: tsType},
	{Name: "type", Type: arrow.BinaryTypes.String},
	{Name: "agent", Type: arrow.BinaryTypes.String},
	{Name: "action_type", Type: arrow.BinaryTypes.String},
	{Name: "target", Type: arrow.BinaryTypes.String},
	{Name: "capability", Type: arrow.BinaryTypes.String},
	{Name: "body", Type: arrow.BinaryTypes.String},
	{Name: "stream_seq", Type: arrow.PrimitiveTypes.Uint64},
}, nil)

// VerdictBatch builds an Arrow record batch of verdicts. It is not safe
// for concurrent use.
type VerdictBatch struct {
	b *array.RecordBuilder
}

// NewVerdictBatch returns an empty batch allocating from mem (nil: the Go
// allocator).
func NewVerdictBatch(mem memory.Allocator) *VerdictBatch {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &VerdictBatch{b: array.NewRecordBuilder(mem, VerdictArrowSchema)}
}

// Append adds one verdict. The rule version is what follows the last '@'
// of the rule id (a rule whose meaning changed is stored as <id>@<version>).
func (vb *VerdictBatch) Append(v *VerdictEvent, m StreamMeta) error {
	var sub, ev string
	if v.Cause != nil {
		sub = v.Cause.Subformula
		data, err := json.Marshal(v.Cause.Event)
		if err != nil {
			return err
		}
		ev = string(data)
	}
	version := ""
	if i := strings.LastIndexByte(v.Rule.ID, '@'); i >= 0 {
		version = v.Rule.ID[i+1:]
	}
	f := vb.b.Fields()
	f[0].(*array.StringBuilder).Append(v.RunID)
	f[1].(*array.StringBuilder).Append(v.Rule.ID)
	f[2].(*array.Uint64Builder).Append(v.Seq)
	f[3].(*array.TimestampBuilder).Append(arrow.Timestamp(m.Time.UnixMilli()))
	f[4].(*array.StringBuilder).Append(string(v.Status))
	f[5].(*array.StringBuilder).Append(string(v.Leaning))
	f[6].(*array.StringBuilder).Append(string(v.Mode))
	f[7].(*array.StringBuilder).Append(v.Rule.Description)
	f[8].(*array.StringBuilder).Append(version)
	f[9].(*array.StringBuilder).Append(sub)
	f[10].(*array.StringBuilder).Append(ev)
	f[11].(*array.Uint64Builder).Append(m.Seq)
	return nil
}

// Len is the number of verdicts appended since the last Record.
func (vb *VerdictBatch) Len() int { return vb.b.Field(0).Len() }

// Record returns the verdicts appended so far as a record batch (the
// caller releases it) and empties the batch.
func (vb *VerdictBatch) Record() arrow.RecordBatch { return vb.b.NewRecordBatch() }

// Release frees the batch's buffers.
func (vb *VerdictBatch) Release() { vb.b.Release() }

// EventBatch builds an Arrow record batch of trace events. It is not safe
// for concurrent use.
type EventBatch struct {
	b *array.RecordBuilder
}

// NewEventBatch returns an empty batch allocating from mem (nil: the Go
// allocator).
func NewEventBatch(mem memory.Allocator) *EventBatch {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &EventBatch{b: array.NewRecordBuilder(mem, EventArrowSchema)}
}

// Append adds one event; body is its JSON as received (kept whole).
func (eb *EventBatch) Append(e *Event, body []byte, m StreamMeta) {
	var agent, actionType, target, capability string
	if e.Start != nil {
		agent = e.Start.Agent
	}
	if a := e.Action; a != nil {
		actionType, capability, target = a.ActionType, a.Capability, actionTarget(a)
		if actionType == "" {
			actionType = a.Type
		}
	}
	f := eb.b.Fields()
	f[0].(*array.StringBuilder).Append(e.RunID)
	f[1].(*array.Uint64Builder).Append(e.Seq)
	f[2].(*array.TimestampBuilder).Append(arrow.Timestamp(e.TS.UnixMilli()))
	f[3].(*array.StringBuilder).Append(string(e.Type))
	f[4].(*array.StringBuilder).Append(agent)
	f[5].(*array.StringBuilder).Append(actionType)
	f[6].(*array.StringBuilder).Append(target)
	f[7].(*array.StringBuilder).Append(capability)
	f[8].(*array.StringBuilder).BinaryBuilder.Append(body)
	f[9].(*array.Uint64Builder).Append(m.Seq)
}

// Len is the number of events appended since the last Record.
func (eb *EventBatch) Len() int { return eb.b.Field(0).Len() }

// Record returns the events appended so far as a record batch (the caller
// releases it) and empties the batch.
func (eb *EventBatch) Record() arrow.RecordBatch { return eb.b.NewRecordBatch() }

// Release frees the batch's buffers.
func (eb *EventBatch) Release() { eb.b.Release() }

// actionTarget is the stored target of an action: its first FileRef
// evidence, else its request's path.
func actionTarget(a *Action) string {
	for _, ev := range a.Evidence {
		if ev.Type == "FileRef" && ev.Ref != "" {
			return ev.Ref
		}
	}
	if len(a.Request) > 0 {
		var r struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(a.Request, &r) == nil {
			return r.Path
		}
	}
	return ""
}
