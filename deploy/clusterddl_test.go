package deploy_test

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink/chdb"
)

// clusterName is the cluster the deploy files name (remote_servers in
// clickhouse/cluster/, the Distributed tables of schema.sql).
const clusterName = "ponens"

// The checked-in cluster DDL is what the generator writes now.
func TestClusterDDLUpToDate(t *testing.T) {
	want, err := schema.ClusterSQL(clusterName)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(repoFile(t, schema.ClusterSQLFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with schema/sql: run `go run ./internal/gen/clusterddl` (first difference at byte %d)", schema.ClusterSQLFile, firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// splitSQL splits a script into statements the way the migrations are
// split: a semicolon ends a statement at the end of a line; comment lines
// are dropped.
func splitSQL(data string) []string {
	var out, cur []string
	for _, line := range strings.Split(data, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur = append(cur, line)
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(strings.Join(cur, "\n")), ";"))
			cur = nil
		}
	}
	return out
}

// clusterStatements are the statements of the checked-in cluster DDL.
func clusterStatements(t *testing.T) []string {
	data, err := os.ReadFile(repoFile(t, schema.ClusterSQLFile))
	if err != nil {
		t.Fatal(err)
	}
	return splitSQL(string(data))
}

// The rewrites that turn the cluster DDL back into statements the embedded
// engine (one server, no Keeper, no cluster) runs; each must apply to as
// many statements as the test expects, so that the cluster DDL cannot
// drift away from them unseen.
var (
	onCluster  = regexp.MustCompile(` ON CLUSTER ` + clusterName + `\b`)
	replicated = regexp.MustCompile(`Replicated(\w*MergeTree)\('/clickhouse/tables/(\{shard\}|all)/\{database\}/\{table\}', '\{replica\}'(, )?`)
	// A Distributed table becomes a Merge table over its local table: the
	// same columns (AS <table>_local), readable where no cluster exists.
	distributed = regexp.MustCompile(`ENGINE = Distributed\('` + clusterName + `', currentDatabase\(\), '(\w+)', [^\n]+\)$`)
	localName   = regexp.MustCompile(`\b(\w+)` + schema.LocalSuffix + `\b`)
)

// embeddable is stmt as the embedded engine can run it.
func embeddable(stmt string) string {
	s := onCluster.ReplaceAllString(stmt, "")
	s = replicated.ReplaceAllString(s, "$1(")
	return distributed.ReplaceAllString(s, "ENGINE = Merge(currentDatabase(), '^$1$$')")
}

var (
	engineOnce *chdb.Engine
)

// openEngine opens the embedded engine of this test process.
func openEngine(t *testing.T) *chdb.Engine {
	t.Helper()
	if engineOnce != nil {
		return engineOnce
	}
	dir, err := os.MkdirTemp("", "ponens-deploy-test-")
	if err != nil {
		t.Fatal(err)
	}
	e, err := chdb.Open(chdb.Options{Path: dir})
	if err != nil {
		t.Fatalf("the embedded engine (make chdb installs it): %v", err)
	}
	engineOnce = e
	return e
}

func query(t *testing.T, e *chdb.Engine, sql string) string {
	t.Helper()
	out, err := e.Query([]byte(sql), "TabSeparated")
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return strings.TrimSpace(string(out))
}

// formatted is the engine's canonical text of stmt (formatQuery parses it
// without running it: ON CLUSTER and Replicated engines included).
func formatted(t *testing.T, e *chdb.Engine, stmt string) string {
	t.Helper()
	out, err := e.Query([]byte("SELECT formatQuery('"+strings.ReplaceAll(strings.ReplaceAll(stmt, `\`, `\\`), "'", `\'`)+"')"), "RawBLOB")
	if err != nil {
		t.Fatalf("the embedded engine does not parse %q: %v", stmt, err)
	}
	return strings.TrimSpace(string(out))
}

// Every statement of the cluster DDL parses, and differs from its
// single-node statement only in its engine, ON CLUSTER and the local
// tables' names: with those turned back, the engine formats both alike.
func TestClusterDDLDiffersOnlyInEngines(t *testing.T) {
	e := openEngine(t)
	single := map[string]string{} // canonical text → the single-node statement
	ms, err := schema.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for _, s := range m.Statements {
			single[formatted(t, e, s)] = s
		}
	}
	single[formatted(t, e, schema.MigrationsDDL)] = schema.MigrationsDDL
	matched := map[string]bool{}
	locals, dists := map[string]bool{}, map[string]bool{} // made again by a later migration: counted once
	created := regexp.MustCompile(`^CREATE TABLE IF NOT EXISTS (\w+)`)
	for _, s := range clusterStatements(t) {
		formatted(t, e, s) // the cluster form parses as it is
		if strings.HasPrefix(s, "INSERT INTO "+schema.MigrationsTable) {
			continue
		}
		if !onCluster.MatchString(s) {
			t.Errorf("not ON CLUSTER %s: %.80q", clusterName, s)
		}
		if distributed.MatchString(s) {
			dists[created.FindStringSubmatch(s)[1]] = true
			continue // its columns are checked by TestClusterColumnsMatchSingleNode
		}
		if replicated.MatchString(s) {
			locals[created.FindStringSubmatch(s)[1]] = true
		}
		back := formatted(t, e, localName.ReplaceAllString(embeddable(s), "$1"))
		if _, ok := single[back]; !ok {
			t.Errorf("this cluster statement is not a single-node statement with another engine and ON CLUSTER:\n%s\nturned back:\n%s", s, back)
		}
		matched[back] = true
	}
	for f, s := range single {
		if !matched[f] {
			t.Errorf("the single-node statement has no cluster form:\n%s", s)
		}
	}
	if tables := len(schema.ShardingKeys); len(locals) != tables+1 || len(dists) != tables {
		t.Errorf("%d replicated and %d Distributed tables for %d stored tables (and schema_migrations, replicated only)", len(locals), len(dists), tables)
	}
}

// columnsOf lists name, type, default and codec of every column of every
// table and view of database db, by table and position.
func columnsOf(t *testing.T, e *chdb.Engine, db string) map[string]string {
	out := query(t, e, "SELECT table, groupArray(concat(name, ' ', type, ' ', default_kind, ' ', default_expression, ' ', compression_codec)) "+
		"FROM (SELECT * FROM system.columns WHERE database = '"+db+"' ORDER BY table, position) GROUP BY table")
	cols := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		table, list, _ := strings.Cut(line, "\t")
		cols[table] = list
	}
	return cols
}

// keysOf lists the partition, sorting and primary keys of the tables of db.
func keysOf(t *testing.T, e *chdb.Engine, db string) map[string]string {
	out := query(t, e, "SELECT name, partition_key, sorting_key, primary_key FROM system.tables WHERE database = '"+db+"' AND engine LIKE '%MergeTree'")
	keys := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		name, rest, _ := strings.Cut(line, "\t")
		keys[name] = rest
	}
	return keys
}

// The cluster DDL, run in the embedded engine with its engines turned back
// (replicated → plain, Distributed → Merge over the local table), gives
// every table and view of the single-node schema the same columns, column
// for column (name, type, default, codec, order), and its local tables the
// same keys; and the same rows inserted into both give the same answers
// from every table and view, so the materialized views are pointed right.
func TestClusterColumnsMatchSingleNode(t *testing.T) {
	e := openEngine(t)
	for _, s := range []string{"CREATE DATABASE IF NOT EXISTS single", "CREATE DATABASE IF NOT EXISTS cluster", "USE single"} {
		query(t, e, s)
	}
	if _, err := chdb.Migrate(e); err != nil {
		t.Fatal(err)
	}
	query(t, e, "USE cluster")
	for _, s := range clusterStatements(t) {
		if err := e.Exec(embeddable(s)); err != nil {
			t.Fatalf("%s: %v", embeddable(s), err)
		}
	}
	sc, cc := columnsOf(t, e, "single"), columnsOf(t, e, "cluster")
	for table, cols := range sc {
		if cc[table] != cols {
			t.Errorf("%s: cluster columns\n  %s\nsingle-node columns\n  %s", table, cc[table], cols)
		}
		if _, stored := schema.ShardingKeys[table]; stored && cc[table+schema.LocalSuffix] != cols {
			t.Errorf("%s%s: columns\n  %s\nsingle-node columns\n  %s", table, schema.LocalSuffix, cc[table+schema.LocalSuffix], cols)
		}
	}
	if len(sc) < len(schema.ShardingKeys)+5 {
		t.Fatalf("the single-node schema has only %d tables and views: %v", len(sc), sc)
	}
	sk, ck := keysOf(t, e, "single"), keysOf(t, e, "cluster")
	for table, keys := range sk {
		local := table + schema.LocalSuffix
		if table == schema.MigrationsTable {
			local = table
		}
		if ck[local] != keys {
			t.Errorf("%s: keys %q, single-node %q", local, ck[local], keys)
		}
	}
	checkSameAnswers(t, e)
}

// checkSameAnswers inserts the same events and verdicts into both
// schemas (the cluster's through its local tables, as a shard receives
// them) and compares every table and view.
func checkSameAnswers(t *testing.T, e *chdb.Engine) {
	events := `('r1', 1, '2026-01-01 10:00:00', 'run.start', 'agent-a', '', '', '', '{}', 1, now()),
		('r1', 2, '2026-01-01 10:01:00', 'action', '', 'EditFile', 'a.go', 'file.write', '{}', 2, now()),
		('r2', 1, '2026-01-01 11:00:00', 'run.start', 'agent-b', '', '', '', '{}', 3, now()),
		('r2', 2, '2026-01-01 11:05:00', 'run.finish', '', '', '', '', '{}', 4, now())`
	verdicts := `('r1', 'tbc', 2, '2026-01-01 10:01:00', 'violated', '', 'observe', 'd', 'v1', 'F x', '{}', 5),
		('r2', 'tbc', 2, '2026-01-01 11:05:00', 'satisfied', '', 'observe', 'd', 'v1', '', '', 6),
		('r1', 'rbe', 2, '2026-01-01 10:01:00', 'pending', 'violate', 'observe', 'd', 'v1', '', '', 7)`
	for _, db := range []string{"single", "cluster"} {
		suffix := ""
		if db == "cluster" {
			suffix = schema.LocalSuffix
		}
		for range 2 { // a replayed batch changes no answer
			query(t, e, "INSERT INTO "+db+".events"+suffix+" VALUES "+events)
			query(t, e, "INSERT INTO "+db+".verdicts"+suffix+" VALUES "+verdicts)
		}
	}
	for _, q := range []string{
		"SELECT run_id, seq, type FROM %s.events FINAL ORDER BY ALL",
		"SELECT run_id, rule_id, status FROM %s.verdicts FINAL ORDER BY ALL",
		"SELECT run_id, rule_id, status FROM %s.run_rule_status FINAL ORDER BY ALL",
		"SELECT run_id, max(agent), min(started_at), max(ended_at), max(outcome), max(last_seq) FROM %s.runs GROUP BY run_id ORDER BY ALL",
		"SELECT rule_id, hour, uniqExactMerge(violations), uniqExactMerge(runs) FROM %s.violations_rule_hour GROUP BY ALL ORDER BY ALL",
		"SELECT * FROM %s.compliance_agent_day ORDER BY ALL",
		"SELECT * FROM %s.open_runs ORDER BY ALL",
		"SELECT * FROM %s.run_rule_matrix ORDER BY ALL",
	} {
		s, c := query(t, e, strings.ReplaceAll(q, "%s", "single")), query(t, e, strings.ReplaceAll(q, "%s", "cluster"))
		if s == "" || s != c {
			t.Errorf("%s\nsingle-node:\n%s\ncluster:\n%s", q, s, c)
		}
	}
}
