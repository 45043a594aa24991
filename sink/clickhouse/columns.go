package clickhouse

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Columns converts a record batch into one Go slice per column, as
// clickhouse-go appends column blocks: String into []string, Uint64 and
// Uint32 into []uint64 and []uint32, Boolean into []bool, and a
// millisecond Timestamp into []time.Time in UTC. A column of another type,
// or with a null, is an error naming the column.
func Columns(rec arrow.RecordBatch) ([]any, error) {
	out := make([]any, rec.NumCols())
	for i, col := range rec.Columns() {
		name := rec.Schema().Field(i).Name
		if col.NullN() > 0 {
			return nil, fmt.Errorf("column %s: %d nulls; the stored columns have none", name, col.NullN())
		}
		c, err := column(col)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		out[i] = c
	}
	return out, nil
}

// column converts one Arrow array.
func column(col arrow.Array) (any, error) {
	n := col.Len()
	switch a := col.(type) {
	case *array.String:
		s := make([]string, n)
		for i := range s {
			s[i] = a.Value(i)
		}
		return s, nil
	case *array.Uint64:
		return append([]uint64(nil), a.Uint64Values()...), nil
	case *array.Uint32:
		return append([]uint32(nil), a.Uint32Values()...), nil
	case *array.Boolean:
		s := make([]bool, n)
		for i := range s {
			s[i] = a.Value(i)
		}
		return s, nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		if unit != arrow.Millisecond {
			return nil, fmt.Errorf("timestamps in %s, expected milliseconds", unit)
		}
		s := make([]time.Time, n)
		for i, v := range a.TimestampValues() {
			s[i] = time.UnixMilli(int64(v)).UTC()
		}
		return s, nil
	}
	return nil, fmt.Errorf("Arrow type %s cannot be stored (expected string, uint64, uint32, bool or timestamp[ms])", col.DataType())
}
