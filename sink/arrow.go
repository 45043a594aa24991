package sink

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ponens/ponens/schema"
)

// Inserter writes one Arrow record batch into a table of a store, whose
// columns are the record's, in its order. A token that is not empty is the
// insert's deduplication token: the store drops an insert whose token it
// has seen among its recent inserts into the table.
type Inserter interface {
	InsertArrow(table string, rec arrow.RecordBatch, token string) error
}

// NewArrowAppender returns an Appender that builds each table's rows as
// an Arrow record batch (schema.NewVerdictBatch, schema.NewEventBatch, …)
// and commits them through ins, each insert named by its BatchKey. Every
// store appends through it, so that each gets the same rows and tokens
// from the same records.
func NewArrowAppender(ins Inserter) Appender {
	a := &arrowAppender{ins: ins, verdicts: schema.NewVerdictBatch(nil), events: schema.NewEventBatch(nil),
		deadLetters: schema.NewDeadLetterBatch(nil), rules: schema.NewRuleVersionBatch(nil)}
	// The order of the inserts: a run's events before its verdicts.
	a.tables = []*table{{name: "events", rows: a.events}, {name: "verdicts", rows: a.verdicts},
		{name: "dead_letters", rows: a.deadLetters}, {name: "rule_versions", rows: a.rules}}
	return a
}

type arrowAppender struct {
	ins         Inserter
	verdicts    *schema.VerdictBatch
	events      *schema.EventBatch
	deadLetters *schema.RecordBatch
	rules       *schema.RecordBatch
	tables      []*table
}

// table is one table's part of a batch.
type table struct {
	name string
	rows interface {
		Len() int
		Record() arrow.RecordBatch
	}
	key BatchKey
	// held is the record batch built by a Commit that failed, kept so
	// that the next Commit writes the same rows.
	held arrow.RecordBatch
	// inserted is the rows inserted into the table not yet taken
	// (takeInserted).
	inserted int
}

// tableCounter is an Appender that counts the rows its commits inserted
// into each table.
type tableCounter interface {
	// takeInserted calls f with each table's rows inserted since the
	// last call.
	takeInserted(f func(table string, rows int))
}

func (a *arrowAppender) takeInserted(f func(table string, rows int)) {
	for _, t := range a.tables {
		if t.inserted > 0 {
			f(t.name, t.inserted)
			t.inserted = 0
		}
	}
}

func (a *arrowAppender) AppendVerdict(v *schema.VerdictEvent, m schema.StreamMeta) error {
	if err := a.verdicts.Append(v, m); err != nil {
		return fmt.Errorf("verdict %s/%s/%d: %w", v.RunID, v.Rule.ID, v.Seq, err)
	}
	a.tables[1].key.Add(m.Seq, v.Seq, v.RunID, v.Rule.ID)
	return nil
}

func (a *arrowAppender) AppendEvent(e *schema.Event, body []byte, m schema.StreamMeta) error {
	a.events.Append(e, body, m)
	a.tables[0].key.Add(m.Seq, e.Seq, e.RunID)
	return nil
}

func (a *arrowAppender) AppendDeadLetter(d *schema.DeadLetter, m schema.StreamMeta) error {
	a.deadLetters.AppendDeadLetter(d, m)
	a.tables[2].key.Add(m.Seq, 0, d.Reason, d.Error)
	return nil
}

func (a *arrowAppender) AppendRuleVersion(r *schema.RuleVersionRow, m schema.StreamMeta) error {
	a.rules.AppendRuleVersion(r)
	a.tables[3].key.Add(m.Seq, 0, r.RuleID, r.Version)
	return nil
}

// Commit inserts each table's rows as one record batch named by its
// stream sequences, so that an insert repeated whole is dropped by the
// store; a batch cut differently on a replay is made exact by the tables'
// keys. A table whose insert failed keeps its record batch for the next
// Commit; those inserted are not inserted again.
func (a *arrowAppender) Commit() error {
	for _, t := range a.tables {
		if t.held == nil && t.rows.Len() > 0 {
			t.held = t.rows.Record()
		}
		if t.held == nil {
			continue
		}
		if err := a.ins.InsertArrow(t.name, t.held, t.key.Token(t.name)); err != nil {
			return err
		}
		t.inserted += int(t.held.NumRows())
		t.held.Release()
		t.held, t.key = nil, BatchKey{}
	}
	return nil
}

func (a *arrowAppender) Rollback() error {
	for _, t := range a.tables {
		if t.held != nil {
			t.held.Release()
		}
		t.rows.Record().Release()
		t.held, t.key = nil, BatchKey{}
	}
	return nil
}
