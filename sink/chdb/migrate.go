package chdb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ponens/ponens/schema"
)

// Migrate applies the storage schema's migrations that the engine's data
// directory has not recorded yet, in order, and records each in
// schema.MigrationsTable. It returns the versions it applied.
func Migrate(e *Engine) ([]int, error) {
	ms, err := schema.Migrations()
	if err != nil {
		return nil, err
	}
	if err := e.Exec(schema.MigrationsDDL); err != nil {
		return nil, fmt.Errorf("migrations table: %w", err)
	}
	out, err := e.Query([]byte("SELECT version FROM "+schema.MigrationsTable+" FINAL"), "TabSeparated")
	if err != nil {
		return nil, err
	}
	done := map[int]bool{}
	for _, f := range strings.Fields(string(out)) {
		v, _ := strconv.Atoi(f)
		done[v] = true
	}
	var applied []int
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if err := e.Exec(stmt); err != nil {
				return applied, fmt.Errorf("migration %s, statement %d: %w", m.Name, i+1, err)
			}
		}
		rec := fmt.Sprintf("INSERT INTO %s (version, name) VALUES (%d, '%s')", schema.MigrationsTable, m.Version, m.Name)
		if err := e.Exec(rec); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}
