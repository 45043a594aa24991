package chdb

import (
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
)

// Store writes batches into the engine's tables. It is safe for concurrent
// use; its Appenders are not.
type Store struct {
	e *Engine
}

// NewStore returns a store over e, whose schema must be migrated (Migrate).
func NewStore(e *Engine) *Store { return &Store{e: e} }

// Appender returns a new, empty batch.
func (s *Store) Appender() sink.Appender {
	return &appender{e: s.e, verdicts: schema.NewVerdictBatch(nil), events: schema.NewEventBatch(nil)}
}

var _ sink.Appendable = (*Store)(nil)

type appender struct {
	e        *Engine
	verdicts *schema.VerdictBatch
	events   *schema.EventBatch
	// held are the record batches built by a Commit that failed, kept so
	// that the next Commit writes the same rows.
	heldVerdicts, heldEvents arrow.RecordBatch
	vseq, eseq               seqRange
}

// seqRange is the stream sequences of a batch and a hash of its rows'
// keys; it names the batch's insert deduplication token. The hash keeps
// two batches apart that hold other records at the same positions (a
// stream made anew, or two checks of other traces): only the same records
// at the same positions are dropped as a repeat.
type seqRange struct{ first, last, n, h uint64 }

func (r *seqRange) add(s, seq uint64, key ...string) {
	if r.n == 0 {
		r.first, r.h = s, fnvOffset
	}
	r.first, r.last = min(r.first, s), max(r.last, s)
	r.n++
	r.h = fnvUint(fnvUint(r.h, s), seq)
	for _, k := range key {
		r.h = fnvAdd(r.h, k)
	}
}

// fnvUint hashes the eight bytes of u into h (FNV-1a).
func fnvUint(h, u uint64) uint64 {
	for range 8 {
		h = (h ^ (u & 0xff)) * fnvPrime
		u >>= 8
	}
	return h
}

const fnvOffset, fnvPrime = 14695981039346656037, 1099511628211

// fnvAdd hashes s and a separator into h (FNV-1a, 64 bits).
func fnvAdd(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return (h ^ 0xff) * fnvPrime
}

func (a *appender) AppendVerdict(v *schema.VerdictEvent, m schema.StreamMeta) error {
	if err := a.verdicts.Append(v, m); err != nil {
		return fmt.Errorf("verdict %s/%s/%d: %w", v.RunID, v.Rule.ID, v.Seq, err)
	}
	a.vseq.add(m.Seq, v.Seq, v.RunID, v.Rule.ID)
	return nil
}

func (a *appender) AppendEvent(e *schema.Event, body []byte, m schema.StreamMeta) error {
	a.events.Append(e, body, m)
	a.eseq.add(m.Seq, e.Seq, e.RunID)
	return nil
}

// Commit inserts the events, then the verdicts, each as one Arrow stream.
// Each insert carries a deduplication token made of its stream sequences,
// so an insert repeated whole is dropped by the engine; a batch cut
// differently on a replay is made exact by the tables' keys.
func (a *appender) Commit() error {
	if a.heldEvents == nil && a.events.Len() > 0 {
		a.heldEvents = a.events.Record()
	}
	if a.heldVerdicts == nil && a.verdicts.Len() > 0 {
		a.heldVerdicts = a.verdicts.Record()
	}
	if a.heldEvents != nil {
		if err := insertArrow(a.e, "events", a.heldEvents, a.eseq); err != nil {
			return err
		}
		a.heldEvents.Release()
		a.heldEvents, a.eseq = nil, seqRange{}
	}
	if a.heldVerdicts != nil {
		if err := insertArrow(a.e, "verdicts", a.heldVerdicts, a.vseq); err != nil {
			return err
		}
		a.heldVerdicts.Release()
		a.heldVerdicts, a.vseq = nil, seqRange{}
	}
	return nil
}

func (a *appender) Rollback() error {
	for _, r := range []arrow.RecordBatch{a.heldEvents, a.heldVerdicts, a.events.Record(), a.verdicts.Record()} {
		if r != nil {
			r.Release()
		}
	}
	a.heldEvents, a.heldVerdicts, a.eseq, a.vseq = nil, nil, seqRange{}, seqRange{}
	return nil
}

// InsertArrow inserts a record batch into table as an Arrow stream; the
// record's columns must be the table's, in its order.
func InsertArrow(e *Engine, table string, rec arrow.RecordBatch) error {
	return insertArrow(e, table, rec, seqRange{})
}

func insertArrow(e *Engine, table string, rec arrow.RecordBatch, r seqRange) error {
	// The bytes go through a file, not after the statement's text: the
	// engine reads data inline in a statement only so far, and a batch of
	// a few hundred kilobytes fails with CANNOT_READ_ALL_DATA
	// (TestAppenderLargeBatch).
	f, err := os.CreateTemp("", "ponens-insert-*.arrows")
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	defer os.Remove(f.Name())
	w := ipc.NewWriter(f, ipc.WithSchema(rec.Schema()))
	err = w.Write(rec)
	if err == nil {
		err = w.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("insert into %s: arrow: %w", table, err)
	}
	var q strings.Builder
	fmt.Fprintf(&q, "INSERT INTO %s FROM INFILE '%s'", table, quote(f.Name()))
	if r.n > 0 && r.first > 0 {
		fmt.Fprintf(&q, " SETTINGS insert_deduplication_token = '%s:%d-%d:%d:%016x'", table, r.first, r.last, r.n, r.h)
	}
	q.WriteString(" FORMAT ArrowStream")
	if _, err := e.Query([]byte(q.String()), ""); err != nil {
		return fmt.Errorf("insert into %s (%d rows): %w", table, rec.NumRows(), err)
	}
	return nil
}

// quote escapes s for a single-quoted SQL string.
func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}
