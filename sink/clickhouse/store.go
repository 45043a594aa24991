package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ponens/ponens/sink"
)

// ErrUnreachable marks a server that did not answer, or refused the
// credentials.
var ErrUnreachable = errors.New("the ClickHouse server of store.dsn did not answer")

// Store writes batches into a ClickHouse server's tables. It is safe for
// concurrent use; its Appenders are not.
type Store struct {
	conn driver.Conn
	// Timeout bounds each insert (default one minute).
	Timeout time.Duration
}

var (
	_ sink.Appendable = (*Store)(nil)
	_ sink.Inserter   = (*Store)(nil)
)

// Open connects to the server of dsn (ParseDSN) and checks that it
// answers within ctx. Its errors wrap ErrDSN or ErrUnreachable.
func Open(ctx context.Context, dsn string) (*Store, error) {
	o, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := ch.Open(o)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDSN, err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w (%s): %v", ErrUnreachable, strings.Join(o.Addr, ", "), err)
	}
	return &Store{conn: conn, Timeout: time.Minute}, nil
}

// Conn is the store's connection pool.
func (s *Store) Conn() driver.Conn { return s.conn }

// Close closes the connections.
func (s *Store) Close() error { return s.conn.Close() }

// Appender returns a new, empty batch.
func (s *Store) Appender() sink.Appender { return sink.NewArrowAppender(s) }

// InsertArrow appends rec's columns (Columns) to one insert into table,
// named by their Arrow fields, with token as its
// insert_deduplication_token when it is not empty.
func (s *Store) InsertArrow(table string, rec arrow.RecordBatch, token string) error {
	cols, err := Columns(rec)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	if token != "" {
		ctx = ch.Context(ctx, ch.WithSettings(ch.Settings{"insert_deduplication_token": token}))
	}
	b, err := s.conn.PrepareBatch(ctx, InsertSQL(table, rec.Schema()))
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	for i, c := range cols {
		if err := b.Column(i).Append(c); err != nil {
			b.Abort()
			return fmt.Errorf("insert into %s, column %s: %w", table, rec.Schema().Field(i).Name, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert into %s (%d rows): %w", table, rec.NumRows(), err)
	}
	return nil
}

// InsertSQL is the insert of a batch with sc's columns into table; the
// table's other columns take their defaults.
func InsertSQL(table string, sc *arrow.Schema) string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return "INSERT INTO " + table + " (" + strings.Join(names, ", ") + ")"
}
