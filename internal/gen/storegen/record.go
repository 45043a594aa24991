package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/query/record/stored"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

// storeRecords stores the one run of the trace file at path n times, as
// runs record-0 … record-(n-1), after what the store holds (their stream
// positions follow its last one), and writes their record entries as the
// sink does once a run has ended.
func storeRecords(store, path string, n int) error {
	runs, err := tracefile.Read(path, 0)
	if err != nil {
		return err
	}
	if len(runs) != 1 {
		return fmt.Errorf("-record %s: %d runs, want one", path, len(runs))
	}
	e, err := chdb.Open(chdb.Options{Path: store})
	if err != nil {
		return err
	}
	defer e.Close()
	last, err := e.Query([]byte("SELECT max(stream_seq) FROM events"), "TSV")
	if err != nil {
		return err
	}
	var pos uint64
	fmt.Sscan(string(last), &pos)
	began := time.Now()
	st := chdb.NewStore(e)
	a := st.Appender()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("record-%d", i)
		events := make([]schema.Event, len(runs[0].Events))
		for k, ev := range runs[0].Events {
			ev.RunID = ids[i]
			events[k] = ev
		}
		if err := sink.AppendRun(a, events, nil, &pos); err != nil {
			return err
		}
	}
	if err := a.Commit(); err != nil {
		a.Rollback()
		return err
	}
	w := &stored.Writer{Store: chdb.Querier{E: e}, Insert: st, Problems: func(run string, problems []string) {
		fmt.Printf("record    run %s: %s\n", run, strings.Join(problems, "; "))
	}}
	if err := w.Ended(context.Background(), ids); err != nil {
		return err
	}
	out, err := e.Query([]byte("SELECT count() FROM record_entries WHERE run_id LIKE 'record-%'"), "TSV")
	if err != nil {
		return err
	}
	fmt.Printf("record    %d runs of %s in %s, %s record entries\n", n, path, time.Since(began).Round(time.Millisecond), strings.TrimSpace(string(out)))
	return nil
}
