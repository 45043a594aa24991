// Package stored keeps the record of stored runs in the record_entries
// table, so that SQL over the store can ask what the fleet established
// about a symbol. When the sink has stored a run's closing event
// (run.finish, run.error, run.cancel), Writer reads the run's events back
// from the store in seq order, extracts the run's record as the record
// query does (package record) and writes one row per entry. The rows of a
// run are keyed by symbol, file, run and ref: writing them again (a batch
// delivered again after a crash) replaces them.
//
// A run that ends without a closing event (it idles out) has no rows; the
// query service answers its record from its events all the same.
package stored

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ponens/ponens/query/record"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
)

// Querier runs a parameterised query on the store and returns its answer
// in format (a row format such as JSONEachRow).
type Querier interface {
	Query(ctx context.Context, sql string, params map[string]string, format string) ([]byte, error)
}

// Writer writes the record entries of ended runs.
type Writer struct {
	// Store is where the runs' events are read.
	Store Querier
	// Insert is where the rows are written.
	Insert sink.Inserter
	// Now is the clock of the rows' stored_at (time.Now when nil).
	Now func() time.Time
	// Problems, when set, is told what a run's payloads held that the
	// record could not read (the entries stand with what could be read).
	Problems func(run string, problems []string)
}

// Ended writes the record entries of runs (sink.Options.Ended). A run
// whose trace the record query cannot read (another spec version) has no
// entries and is not an error: it is reported through Problems.
func (w *Writer) Ended(ctx context.Context, runs []string) error {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	rows := schema.NewRecordEntryBatch(nil)
	for _, run := range runs {
		events, err := Events(ctx, w.Store, run)
		if err != nil {
			return err
		}
		rec, problems, err := record.Extract([]record.Run{{Run: schema.Run{ID: run, Events: events}}})
		if err != nil {
			problems = []string{err.Error()}
		}
		if len(problems) > 0 && w.Problems != nil {
			w.Problems(run, problems)
		}
		if rec == nil {
			continue
		}
		stored := now()
		for _, e := range rec.Entries {
			rows.AppendRecordEntry(row(rec, e, stored))
		}
	}
	if rows.Len() == 0 {
		return nil
	}
	rec := rows.Record()
	defer rec.Release()
	// No deduplication token: the rows replace each other by key, and a
	// later write of a run (its events changed) must not be dropped.
	return w.Insert.InsertArrow("record_entries", rec, "")
}

// row is the stored form of e, an entry of rec.
func row(rec *record.Record, e *record.Entry, stored time.Time) *schema.RecordEntryRow {
	r := &schema.RecordEntryRow{Symbol: e.Symbol, File: e.File, RunID: e.Run, Ref: e.Ref, Kind: e.Kind, Grade: e.Grade,
		Established: e.Established, SourceHash: e.Source.String(), Gaps: uint32(rec.GapsAbout(e)),
		Superseded: e.Superseded, Stored: stored}
	if e.Decomposition != nil {
		r.Regions = uint32(len(e.Decomposition.Regions))
	}
	return r
}

// Events reads the stored events of run, in seq order (one per seq: of
// copies a replayed batch left, the one of the latest stream position, as
// FINAL would keep; LIMIT 1 BY reads only the run's rows, where FINAL
// merges every part that could hold them).
func Events(ctx context.Context, q Querier, run string) ([]schema.Event, error) {
	out, err := q.Query(ctx, "SELECT body FROM events WHERE run_id = {run:String} ORDER BY seq, stream_seq DESC LIMIT 1 BY seq", map[string]string{"run": run}, "JSONEachRow")
	if err != nil {
		return nil, fmt.Errorf("reading the events of run %q: %w", run, err)
	}
	var events []schema.Event
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for i := 1; dec.More(); i++ {
		var row struct {
			Body string `json:"body"`
		}
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("reading the events of run %q: row %d: %w", run, i, err)
		}
		var ev schema.Event
		if err := json.Unmarshal([]byte(row.Body), &ev); err != nil {
			return nil, fmt.Errorf("stored event %d of run %q: %w", i, run, err)
		}
		events = append(events, ev)
	}
	return events, nil
}
