package sink_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
)

type fakeInserter struct{ fail bool }

func (f fakeInserter) InsertArrow(string, arrow.RecordBatch, string) error {
	if f.fail {
		return errors.New("down (a test)")
	}
	return nil
}

// CountingInserter counts the rows of each insert that succeeds, by table
// (what the record entries are written through), and none of one that
// fails.
func TestCountingInserter(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := sink.NewMetrics(reg)
	b := schema.NewRuleVersionBatch(nil)
	for _, id := range []string{"a", "b", "c"} {
		b.AppendRuleVersion(&schema.RuleVersionRow{RuleID: id, Version: "1", Mode: "observe"})
	}
	rec := b.Record()
	defer rec.Release()
	if err := sink.CountingInserter(fakeInserter{}, m).InsertArrow("record_entries", rec, ""); err != nil {
		t.Fatal(err)
	}
	if err := sink.CountingInserter(fakeInserter{fail: true}, m).InsertArrow("record_entries", rec, ""); err == nil {
		t.Fatal("the failing insert did not fail")
	}
	if got := metric(t, reg, "ponens_store_table_rows_total", "table", "record_entries"); got != 3 {
		t.Errorf("ponens_store_table_rows_total{table=record_entries} = %v, want 3 (one insert of 3 rows, one failed)", got)
	}
}
