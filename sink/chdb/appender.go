package chdb

import (
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
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
func (s *Store) Appender() sink.Appender { return sink.NewArrowAppender(s) }

var _ sink.Appendable = (*Store)(nil)

// InsertArrow inserts rec into table; a token that is not empty is the
// insert's deduplication token (sink.Inserter).
func (s *Store) InsertArrow(table string, rec arrow.RecordBatch, token string) error {
	return insertArrow(s.e, table, rec, token)
}

// InsertArrow inserts a record batch into table as an Arrow stream; the
// record's columns must be the table's, in its order.
func InsertArrow(e *Engine, table string, rec arrow.RecordBatch) error {
	return insertArrow(e, table, rec, "")
}

func insertArrow(e *Engine, table string, rec arrow.RecordBatch, token string) error {
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
	if token != "" {
		fmt.Fprintf(&q, " SETTINGS insert_deduplication_token = '%s'", quote(token))
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
