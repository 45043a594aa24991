package clickhouse

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink/chdb"
)

// verdictRecord is a batch of verdicts with every column set, some to
// values that need escaping.
func verdictRecord(t *testing.T, run string) arrow.RecordBatch {
	t.Helper()
	vb := schema.NewVerdictBatch(nil)
	at := time.Date(2026, 12, 4, 10, 11, 12, 345_000_000, time.UTC)
	vs := []schema.VerdictEvent{
		{RunID: run, Seq: 1, Rule: schema.RuleRef{ID: "no-push@v2", Description: "never \"push\"\tto main"}, Status: schema.StatusPending, Leaning: schema.LeaningViolate, Mode: schema.ModeDeny},
		{RunID: run, Seq: 2, Rule: schema.RuleRef{ID: "no-push@v2"}, Status: schema.StatusViolated, Mode: schema.ModeAbort,
			Cause: &schema.Cause{Subformula: "G ¬push", Event: schema.Event{RunID: run, Seq: 2}}},
		{RunID: run + "\nb", Seq: 18446744073709551615, Rule: schema.RuleRef{ID: "ünïcode"}, Status: schema.StatusSatisfied, Mode: schema.ModeObserve},
	}
	for i := range vs {
		if err := vb.Append(&vs[i], schema.StreamMeta{Seq: uint64(9000 + i), Time: at.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	return vb.Record()
}

// eventRecord is a batch of events of several kinds.
func eventRecord(t *testing.T, run string) arrow.RecordBatch {
	t.Helper()
	eb := schema.NewEventBatch(nil)
	bodies := []string{
		`{"v":1,"runId":"` + run + `","seq":1,"ts":"2026-12-04T10:00:00.001Z","type":"run.start","start":{"agent":"claude\\tcode"}}`,
		`{"v":1,"runId":"` + run + `","seq":2,"ts":"2026-12-04T10:00:01Z","type":"action","action":{"id":1,"type":"ReadFile","category":"activity","evidence":[{"type":"FileRef","ref":"secrets/it's.yaml"}],"status":"completed"}}`,
		`{"v":1,"runId":"` + run + `","seq":3,"ts":"2026-12-04T10:00:02.999Z","type":"run.finish"}`,
	}
	for i, b := range bodies {
		e, err := schema.DecodeEvent("test", []byte(b))
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		eb.Append(&e, []byte(b), schema.StreamMeta{Seq: uint64(7000 + i), Time: time.Now()})
	}
	return eb.Record()
}

// text is a converted column's value as the engine's toString writes it.
func text(col any, i int) string {
	switch c := col.(type) {
	case []string:
		return c[i]
	case []uint64:
		return fmt.Sprint(c[i])
	case []uint32:
		return fmt.Sprint(c[i])
	case []bool:
		return fmt.Sprint(c[i])
	case []time.Time:
		return c[i].Format("2006-01-02 15:04:05.000")
	}
	return fmt.Sprintf("%T", col)
}

// The columns a batch becomes on the server path are the rows the
// embedded engine stores from the same record batch, value for value.
func TestColumnsAreTheEmbeddedRows(t *testing.T) {
	for _, tc := range []struct {
		table string
		rec   arrow.RecordBatch
	}{
		{"verdicts", verdictRecord(t, "col-v")},
		{"events", eventRecord(t, "col-e")},
	} {
		t.Run(tc.table, func(t *testing.T) {
			defer tc.rec.Release()
			cols, err := Columns(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := chdb.InsertArrow(engine, tc.table, tc.rec); err != nil {
				t.Fatal(err)
			}
			var sel []string
			for _, f := range tc.rec.Schema().Fields() {
				sel = append(sel, "toString("+f.Name+")")
			}
			col0 := cols[0].([]string)
			q := fmt.Sprintf("SELECT %s FROM %s WHERE run_id IN ('%s', '%s') ORDER BY stream_seq",
				strings.Join(sel, ", "), tc.table, col0[0], strings.ReplaceAll(col0[len(col0)-1], "\n", `\n`))
			out, err := engine.Query([]byte(q), "JSONCompactEachRow")
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != int(tc.rec.NumRows()) {
				t.Fatalf("the engine holds %d rows, the batch %d:\n%s", len(lines), tc.rec.NumRows(), out)
			}
			for i, l := range lines {
				var row []string
				if err := json.Unmarshal([]byte(l), &row); err != nil {
					t.Fatal(err)
				}
				for j, want := range row {
					if got := text(cols[j], i); got != want {
						t.Errorf("row %d, column %s: converted %q, the engine stores %q", i, tc.rec.Schema().Field(j).Name, got, want)
					}
				}
			}
		})
	}
}

// The insert names columns the table has, and every column it does not
// name has a default.
func TestInsertSQLNamesTheTablesColumns(t *testing.T) {
	for table, sc := range map[string]*arrow.Schema{"verdicts": schema.VerdictArrowSchema, "events": schema.EventArrowSchema} {
		out, err := engine.Query([]byte("SELECT name, default_kind FROM system.columns WHERE database = currentDatabase() AND table = '"+table+"' ORDER BY position"), "TabSeparated")
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]bool{}
		for _, f := range sc.Fields() {
			named[f.Name] = true
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, kind, _ := strings.Cut(l, "\t")
			if !named[name] && kind == "" {
				t.Errorf("%s: column %s is neither inserted (%s) nor has a default", table, name, InsertSQL(table, sc))
			}
			delete(named, name)
		}
		for n := range named {
			t.Errorf("%s: %s names %s, which the table does not have", table, InsertSQL(table, sc), n)
		}
	}
}

// A column of a type the stores do not hold, or with a null, is an error
// naming the column.
func TestColumnsRefuses(t *testing.T) {
	mem := memory.DefaultAllocator
	fb := array.NewFloat64Builder(mem)
	fb.Append(1.5)
	sb := array.NewStringBuilder(mem)
	sb.AppendNull()
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Second})
	tb.Append(1)
	for _, tc := range []struct {
		field arrow.Field
		arr   arrow.Array
		want  string
	}{
		{arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64}, fb.NewArray(), "column score: Arrow type float64 cannot be stored"},
		{arrow.Field{Name: "who", Type: arrow.BinaryTypes.String, Nullable: true}, sb.NewArray(), "column who: 1 nulls"},
		{arrow.Field{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Second}}, tb.NewArray(), "column at: timestamps in s, expected milliseconds"},
	} {
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{tc.field}, nil), []arrow.Array{tc.arr}, 1)
		_, err := Columns(rec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.field.Name, err, tc.want)
		}
	}
}
