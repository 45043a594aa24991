package clickhouse

import (
	"context"
	"fmt"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/ponens/ponens/schema"
)

// Migrate applies the storage schema's migrations that the server's
// database has not recorded yet, in order, and records each in
// schema.MigrationsTable, as sink/chdb.Migrate does in the embedded
// engine. It returns the versions it applied.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	ms, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	if err := s.conn.Exec(ctx, schema.MigrationsDDL); err != nil {
		return nil, fmt.Errorf("migrations table: %w", err)
	}
	rows, err := s.conn.Query(ctx, "SELECT version FROM "+schema.MigrationsTable+" FINAL")
	if err != nil {
		return nil, err
	}
	done := map[int]bool{}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, err
		}
		done[int(v)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var applied []int
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if err := s.conn.Exec(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s, statement %d: %w", m.Name, i+1, err)
			}
		}
		rec := ch.Context(ctx, ch.WithParameters(ch.Parameters{"version": fmt.Sprint(m.Version), "name": m.Name}))
		if err := s.conn.Exec(rec, "INSERT INTO "+schema.MigrationsTable+" (version, name) SELECT {version:UInt32}, {name:String}"); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}
