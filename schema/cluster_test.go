package schema

import (
	"regexp"
	"strings"
	"testing"
)

func TestClusterDDLRefuses(t *testing.T) {
	for _, c := range []struct {
		name, cluster, stmt, want string
	}{
		{"cluster name", "a-b", "", `cluster name must be an identifier`},
		{"no sharding key", "c", "CREATE TABLE IF NOT EXISTS nokey (a String) ENGINE = MergeTree ORDER BY a", `sql/0009_x.sql, statement 1: table nokey has no sharding key`},
		{"engine", "c", "CREATE TABLE IF NOT EXISTS events (a String) ENGINE = Memory", `engine Memory has no replicated form`},
		{"statement", "c", "ALTER TABLE events ADD COLUMN b String", `only CREATE TABLE, CREATE MATERIALIZED VIEW, CREATE VIEW`},
		{"view without TO", "c", "CREATE MATERIALIZED VIEW IF NOT EXISTS v ENGINE = MergeTree ORDER BY a AS SELECT a FROM events", `must write a table`},
		{"string", "c", "CREATE VIEW IF NOT EXISTS v AS SELECT 'a FROM events", `unterminated ' string`},
	} {
		var ms []Migration
		if c.stmt != "" {
			ms = []Migration{{Version: 9, Name: "0009_x", Statements: []string{c.stmt}}}
		}
		_, err := ClusterDDLOf(c.cluster, ms)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// A materialized view reads and writes local tables; a name that only
// looks like a table (an alias, a string) is left alone.
func TestClusterDDLViews(t *testing.T) {
	ms := []Migration{{Version: 1, Name: "0001_x", Statements: []string{
		"CREATE TABLE IF NOT EXISTS runs (run_id String) ENGINE = AggregatingMergeTree ORDER BY run_id",
		"CREATE TABLE IF NOT EXISTS events (run_id String, type String) ENGINE = ReplacingMergeTree ORDER BY run_id",
		"CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv TO runs AS SELECT run_id, 'events' AS runs FROM events JOIN runs USING (run_id)",
		"CREATE VIEW IF NOT EXISTS v AS SELECT * FROM runs",
	}}}
	got, err := ClusterDDLOf("c1", ms)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CREATE TABLE IF NOT EXISTS runs_local ON CLUSTER c1 (run_id String) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}') ORDER BY run_id",
		"CREATE TABLE IF NOT EXISTS runs ON CLUSTER c1 AS runs_local\nENGINE = Distributed('c1', currentDatabase(), 'runs_local', cityHash64(run_id))",
		"CREATE MATERIALIZED VIEW IF NOT EXISTS runs_mv ON CLUSTER c1 TO runs_local AS SELECT run_id, 'events' AS runs FROM events_local JOIN runs_local USING (run_id)",
		"CREATE VIEW IF NOT EXISTS v ON CLUSTER c1 AS SELECT * FROM runs",
	}
	if len(got) != 8 || got[len(got)-1] != "INSERT INTO schema_migrations (version, name) VALUES (1, '0001_x')" {
		t.Fatalf("got %q", got)
	}
	for i, at := range []int{1, 2, 5, 6} { // 0 is schema_migrations, 3 and 4 the events tables
		if got[at] != want[i] {
			t.Errorf("statement %d:\n got %s\nwant %s", at, got[at], want[i])
		}
	}
}

// Each sharding key hashes only columns of its table's ORDER BY, so that
// every version of a row lands on one shard.
func TestShardingKeysInOrderBy(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	orderBy := regexp.MustCompile(`(?m)^ORDER BY \(?([^)\n]+)\)?$`)
	args := regexp.MustCompile(`^\w+\(([^)]*)\)$`)
	seen := map[string]bool{}
	for _, m := range ms {
		for _, s := range m.Statements {
			name, ok := tableName(s)
			if !ok {
				continue
			}
			seen[name] = true
			key, ok := ShardingKeys[name]
			o := orderBy.FindStringSubmatch(s)
			a := args.FindStringSubmatch(key)
			if !ok || o == nil || a == nil {
				t.Errorf("%s: sharding key %q, ORDER BY %q", name, key, o)
				continue
			}
			cols := map[string]bool{}
			for _, c := range strings.Split(o[1], ",") {
				cols[strings.TrimSpace(c)] = true
			}
			for _, c := range strings.Split(a[1], ",") {
				if !cols[strings.TrimSpace(c)] {
					t.Errorf("%s: sharding key %s hashes %s, not a column of ORDER BY (%s)", name, key, c, o[1])
				}
			}
		}
	}
	if len(seen) != len(ShardingKeys) {
		t.Errorf("%d tables in the schema, %d sharding keys", len(seen), len(ShardingKeys))
	}
}

// A column change goes to the local and the Distributed table; a table
// setting to the local table only (a Distributed table has no MergeTree
// settings).
func TestClusterDDLAlter(t *testing.T) {
	ms := []Migration{{Version: 4, Name: "0004_x", Statements: []string{
		"CREATE TABLE IF NOT EXISTS dead_letters (stream_seq UInt64) ENGINE = ReplacingMergeTree ORDER BY stream_seq",
		"ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS run_id String",
		"ALTER TABLE dead_letters MODIFY SETTING non_replicated_deduplication_window = 1000",
	}}}
	got, err := ClusterDDLOf("c1", ms)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ALTER TABLE dead_letters_local ON CLUSTER c1 ADD COLUMN IF NOT EXISTS run_id String",
		"ALTER TABLE dead_letters ON CLUSTER c1 ADD COLUMN IF NOT EXISTS run_id String",
		"ALTER TABLE dead_letters_local ON CLUSTER c1 MODIFY SETTING non_replicated_deduplication_window = 1000",
	}
	if len(got) != 7 { // schema_migrations and the two tables first, the record of the migration last
		t.Fatalf("got %q", got)
	}
	for i, w := range want {
		if got[i+3] != w {
			t.Errorf("statement %d:\n got %s\nwant %s", i+3, got[i+3], w)
		}
	}
}
