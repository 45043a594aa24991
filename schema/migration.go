package schema

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// MigrationsTable is the table that records which migrations a store has
// applied.
const MigrationsTable = "schema_migrations"

// MigrationsDDL creates MigrationsTable.
const MigrationsDDL = "CREATE TABLE IF NOT EXISTS " + MigrationsTable +
	" (version UInt32, name String, applied_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY version"

// Migration is one versioned file of the storage schema (sql/NNNN_name.sql):
// ClickHouse statements applied in order, once per store.
type Migration struct {
	Version    int
	Name       string
	Statements []string
}

// Migrations returns the storage schema's migrations in version order. Each
// file's statements are separated by a semicolon at the end of a line;
// comment lines (--) are dropped.
func Migrations() ([]Migration, error) {
	names, err := sqlFiles.ReadDir("sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range names {
		m, err := parseMigration(e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("schema: migrations %s and %s share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	return ms, nil
}

// parseMigration reads sql/<name>.
func parseMigration(name string) (Migration, error) {
	num, _, ok := strings.Cut(name, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 1 || path.Ext(name) != ".sql" {
		return Migration{}, fmt.Errorf("schema: sql/%s: the name must be NNNN_name.sql with NNNN a version from 1", name)
	}
	data, err := sqlFiles.ReadFile("sql/" + name)
	if err != nil {
		return Migration{}, err
	}
	m := Migration{Version: v, Name: strings.TrimSuffix(name, ".sql")}
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur = append(cur, line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			stmt := strings.TrimSuffix(strings.TrimSpace(strings.Join(cur, "\n")), ";")
			m.Statements = append(m.Statements, stmt)
			cur = nil
		}
	}
	if rest := strings.TrimSpace(strings.Join(cur, "\n")); rest != "" {
		return Migration{}, fmt.Errorf("schema: sql/%s: the last statement does not end with a semicolon: %.40q", name, rest)
	}
	return m, nil
}
