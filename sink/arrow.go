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
// an Arrow record batch (schema.NewVerdictBatch, schema.NewEventBatch) and
// commits them through ins, each insert named by its BatchKey. Every store
// appends through it, so that each gets the same rows and tokens from the
// same records.
func NewArrowAppender(ins Inserter) Appender {
	return &arrowAppender{ins: ins, verdicts: schema.NewVerdictBatch(nil), events: schema.NewEventBatch(nil)}
}

type arrowAppender struct {
	ins      Inserter
	verdicts *schema.VerdictBatch
	events   *schema.EventBatch
	// held are the record batches built by a Commit that failed, kept so
	// that the next Commit writes the same rows.
	heldVerdicts, heldEvents arrow.RecordBatch
	vkey, ekey               BatchKey
}

func (a *arrowAppender) AppendVerdict(v *schema.VerdictEvent, m schema.StreamMeta) error {
	if err := a.verdicts.Append(v, m); err != nil {
		return fmt.Errorf("verdict %s/%s/%d: %w", v.RunID, v.Rule.ID, v.Seq, err)
	}
	a.vkey.Add(m.Seq, v.Seq, v.RunID, v.Rule.ID)
	return nil
}

func (a *arrowAppender) AppendEvent(e *schema.Event, body []byte, m schema.StreamMeta) error {
	a.events.Append(e, body, m)
	a.ekey.Add(m.Seq, e.Seq, e.RunID)
	return nil
}

// Commit inserts the events, then the verdicts, each as one record batch
// named by its stream sequences, so that an insert repeated whole is
// dropped by the store; a batch cut differently on a replay is made exact
// by the tables' keys.
func (a *arrowAppender) Commit() error {
	if a.heldEvents == nil && a.events.Len() > 0 {
		a.heldEvents = a.events.Record()
	}
	if a.heldVerdicts == nil && a.verdicts.Len() > 0 {
		a.heldVerdicts = a.verdicts.Record()
	}
	if err := a.commit("events", &a.heldEvents, &a.ekey); err != nil {
		return err
	}
	return a.commit("verdicts", &a.heldVerdicts, &a.vkey)
}

// commit inserts *held into table, then releases it and resets its key.
func (a *arrowAppender) commit(table string, held *arrow.RecordBatch, key *BatchKey) error {
	if *held == nil {
		return nil
	}
	if err := a.ins.InsertArrow(table, *held, key.Token(table)); err != nil {
		return err
	}
	(*held).Release()
	*held, *key = nil, BatchKey{}
	return nil
}

func (a *arrowAppender) Rollback() error {
	for _, r := range []arrow.RecordBatch{a.heldEvents, a.heldVerdicts, a.events.Record(), a.verdicts.Record()} {
		if r != nil {
			r.Release()
		}
	}
	a.heldEvents, a.heldVerdicts, a.ekey, a.vkey = nil, nil, BatchKey{}, BatchKey{}
	return nil
}
