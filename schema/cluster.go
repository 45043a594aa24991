package schema

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ShardingKeys is the sharding key of each stored table's Distributed
// table on a ClickHouse cluster. Each is a hash of columns of the table's
// ORDER BY key, so that every version of a row lands on one shard, where
// ReplacingMergeTree and FINAL collapse them (a key outside ORDER BY would
// spread the versions of one row over shards and FINAL would keep them
// all). The tables keyed by run go by run_id, so that a run's events and
// verdicts, and the rows the materialized views derive from them
// (run_rule_status, runs, violations_rule_hour), live on one shard.
var ShardingKeys = map[string]string{
	"events":               "cityHash64(run_id)",
	"verdicts":             "cityHash64(run_id)",
	"run_rule_status":      "cityHash64(run_id)",
	"runs":                 "cityHash64(run_id)",
	"rule_versions":        "cityHash64(rule_id)",
	"dead_letters":         "intHash64(stream_seq)",
	"record_entries":       "cityHash64(symbol, file)",
	"violations_rule_hour": "cityHash64(rule_id)",
}

// LocalSuffix names the replicated table on each node that a Distributed
// table of the same name without the suffix reads and writes through.
const LocalSuffix = "_local"

// ReplicaPath is the Keeper path of each replicated table: one per shard
// and table, the replicas of a shard sharing it. The server expands the
// macros ({shard} and {replica} from each node's configuration, {database}
// and {table} itself).
const ReplicaPath = "/clickhouse/tables/{shard}/{database}/{table}"

// migrationsReplicaPath is the Keeper path of schema_migrations: the same on
// every shard, so that every node holds the one table and a client on any
// node sees which migrations the cluster has.
const migrationsReplicaPath = "/clickhouse/tables/all/{database}/{table}"

// mergeTreeEngines are the engines ClusterDDL turns into their Replicated
// form.
var mergeTreeEngines = map[string]bool{
	"MergeTree": true, "ReplacingMergeTree": true, "AggregatingMergeTree": true, "SummingMergeTree": true,
	"CollapsingMergeTree": true, "VersionedCollapsingMergeTree": true,
}

var clusterName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ClusterDDL is the storage schema for a ClickHouse cluster named cluster
// (a cluster of the servers' remote_servers), generated from the same
// migrations as the single-node store (Migrations); see ClusterDDLOf.
func ClusterDDL(cluster string) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	return ClusterDDLOf(cluster, ms)
}

// ClusterDDLOf rewrites the statements of ms for a cluster, every one ON
// CLUSTER cluster, with these differences only:
//   - a table T of the MergeTree family becomes T_local with the engine's
//     Replicated form (ReplicatedReplacingMergeTree(ReplicaPath,
//     '{replica}', v) for ReplacingMergeTree(v)), its columns, keys, TTL
//     and settings unchanged, and T becomes a Distributed table over
//     T_local with the key of ShardingKeys;
//   - a materialized view reads the local table of its source and writes
//     the local table of its target, so that each shard derives its rows
//     from its own rows as they are inserted;
//   - a plain view stays as it is, over the Distributed tables;
//   - a stored table dropped is dropped whole: its Distributed table,
//     then its local table.
//
// It starts with schema_migrations, replicated to every node, and ends
// recording the migrations as applied, so that a client that migrates finds
// nothing to do. A statement of another kind, a table of another engine or
// one without a sharding key is an error naming its migration.
func ClusterDDLOf(cluster string, ms []Migration) ([]string, error) {
	if !clusterName.MatchString(cluster) {
		return nil, fmt.Errorf("schema: cluster DDL: the cluster name must be an identifier (letters, digits, '_'), got %q", cluster)
	}
	tables := map[string]bool{}
	for _, m := range ms {
		for _, s := range m.Statements {
			if name, ok := tableName(s); ok {
				tables[name] = true
			}
		}
	}
	mig, err := localTable(MigrationsDDL, cluster, migrationsReplicaPath, "")
	if err != nil {
		return nil, fmt.Errorf("schema: cluster DDL: %s: %w", MigrationsTable, err)
	}
	out := []string{mig}
	var applied []string
	for _, m := range ms {
		for i, s := range m.Statements {
			stmts, err := clusterStatement(s, cluster, tables)
			if err != nil {
				return nil, fmt.Errorf("schema: cluster DDL: sql/%s.sql, statement %d: %w", m.Name, i+1, err)
			}
			out = append(out, stmts...)
		}
		applied = append(applied, fmt.Sprintf("(%d, '%s')", m.Version, m.Name))
	}
	if len(applied) > 0 {
		out = append(out, fmt.Sprintf("INSERT INTO %s (version, name) VALUES %s", MigrationsTable, strings.Join(applied, ", ")))
	}
	return out, nil
}

// clusterStatement rewrites one statement of a migration.
func clusterStatement(s, cluster string, tables map[string]bool) ([]string, error) {
	toks, err := lexSQL(s)
	if err != nil {
		return nil, err
	}
	switch {
	case hasWords(toks, "CREATE", "TABLE", "IF", "NOT", "EXISTS"):
		name := toks[5].text
		key, ok := ShardingKeys[name]
		if !ok {
			return nil, fmt.Errorf("table %s has no sharding key: add one to ShardingKeys (schema/cluster.go), a hash of columns of its ORDER BY", name)
		}
		local, err := localTable(s, cluster, ReplicaPath, LocalSuffix)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
		dist := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s ON CLUSTER %s AS %s%s\nENGINE = Distributed('%s', currentDatabase(), '%s%s', %s)",
			name, cluster, name, LocalSuffix, cluster, name, LocalSuffix, key)
		return []string{local, dist}, nil
	case hasWords(toks, "CREATE", "MATERIALIZED", "VIEW", "IF", "NOT", "EXISTS"):
		if len(toks) < 9 || !strings.EqualFold(toks[7].text, "TO") {
			return nil, fmt.Errorf("a materialized view must write a table (CREATE MATERIALIZED VIEW IF NOT EXISTS name TO table AS …)")
		}
		var b strings.Builder
		last := 0
		for i, t := range toks {
			switch {
			case i == 6:
				b.WriteString(s[last:t.end] + " ON CLUSTER " + cluster)
				last = t.end
			case i > 6 && t.kind == tokWord && tables[t.text] && followsTableKeyword(toks, i):
				b.WriteString(s[last:t.end] + LocalSuffix)
				last = t.end
			}
		}
		b.WriteString(s[last:])
		return []string{b.String()}, nil
	case hasWords(toks, "CREATE", "VIEW", "IF", "NOT", "EXISTS"):
		name := toks[5]
		return []string{s[:name.end] + " ON CLUSTER " + cluster + s[name.end:]}, nil
	case hasWords(toks, "ALTER", "TABLE") && len(toks) > 3 && tables[toks[2].text]:
		// A column change goes to the local table and to the Distributed
		// table over it, so that both keep the same columns.
		name := toks[2]
		head, rest := s[:name.end], s[name.end:]
		if hasWords(toks[3:], "MODIFY", "SETTING") {
			// A table setting is the local table's; a Distributed
			// table has none of a MergeTree's.
			return []string{head + LocalSuffix + " ON CLUSTER " + cluster + rest}, nil
		}
		return []string{
			head + LocalSuffix + " ON CLUSTER " + cluster + rest,
			head + " ON CLUSTER " + cluster + rest,
		}, nil
	case hasWords(toks, "DROP", "VIEW", "IF", "EXISTS") && len(toks) > 4:
		name := toks[4]
		return []string{s[:name.end] + " ON CLUSTER " + cluster + s[name.end:]}, nil
	case hasWords(toks, "DROP", "TABLE", "IF", "EXISTS") && len(toks) > 4 && tables[toks[4].text]:
		// The Distributed table goes first, then the local one under it.
		name := toks[4]
		head, rest := s[:name.end], s[name.end:]
		return []string{
			head + " ON CLUSTER " + cluster + rest,
			head + LocalSuffix + " ON CLUSTER " + cluster + rest,
		}, nil
	}
	return nil, fmt.Errorf("only CREATE TABLE, CREATE MATERIALIZED VIEW, CREATE VIEW (each IF NOT EXISTS), ALTER TABLE and DROP TABLE IF EXISTS of a stored table, and DROP VIEW IF EXISTS can be generated for a cluster, got %.40q", s)
}

// followsTableKeyword tells whether toks[i] names a table: it follows TO,
// FROM or JOIN.
func followsTableKeyword(toks []sqlToken, i int) bool {
	if i == 0 || toks[i-1].kind != tokWord {
		return false
	}
	switch strings.ToUpper(toks[i-1].text) {
	case "TO", "FROM", "JOIN":
		return true
	}
	return false
}

// tableName is the table a CREATE TABLE IF NOT EXISTS statement creates.
func tableName(s string) (string, bool) {
	toks, err := lexSQL(s)
	if err != nil || !hasWords(toks, "CREATE", "TABLE", "IF", "NOT", "EXISTS") {
		return "", false
	}
	return toks[5].text, true
}

// localTable rewrites CREATE TABLE IF NOT EXISTS name (columns) ENGINE = E(args) rest
// into the replicated table name+suffix ON CLUSTER cluster with
// ReplicatedE(path, '{replica}', args).
func localTable(s, cluster, path, suffix string) (string, error) {
	toks, err := lexSQL(s)
	if err != nil {
		return "", err
	}
	if !hasWords(toks, "CREATE", "TABLE", "IF", "NOT", "EXISTS") || len(toks) < 7 || toks[6].text != "(" {
		return "", fmt.Errorf("expected CREATE TABLE IF NOT EXISTS name (columns…), got %.40q", s)
	}
	closing := matchParen(toks, 6)
	if closing < 0 || closing+3 >= len(toks) || !strings.EqualFold(toks[closing+1].text, "ENGINE") || toks[closing+2].text != "=" {
		return "", fmt.Errorf("expected ENGINE = after the columns")
	}
	engine := toks[closing+3]
	if !mergeTreeEngines[engine.text] {
		names := make([]string, 0, len(mergeTreeEngines))
		for n := range mergeTreeEngines {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", fmt.Errorf("engine %s has no replicated form; expected one of %s", engine.text, strings.Join(names, ", "))
	}
	args, end := "", engine.end
	if closing+4 < len(toks) && toks[closing+4].text == "(" {
		c := matchParen(toks, closing+4)
		if c < 0 {
			return "", fmt.Errorf("engine %s: unbalanced parentheses", engine.text)
		}
		args = strings.TrimSpace(s[toks[closing+4].end:toks[c].start])
		end = toks[c].end
	}
	repl := fmt.Sprintf("Replicated%s('%s', '{replica}'", engine.text, path)
	if args != "" {
		repl += ", " + args
	}
	repl += ")"
	name := toks[5]
	return s[:name.end] + suffix + " ON CLUSTER " + cluster + s[name.end:engine.start] + repl + s[end:], nil
}

// matchParen is the index of the token closing the parenthesis at toks[open].
func matchParen(toks []sqlToken, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		switch toks[i].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// hasWords tells whether toks starts with the keywords words (any case)
// and a name after them.
func hasWords(toks []sqlToken, words ...string) bool {
	if len(toks) <= len(words) || toks[len(words)].kind != tokWord {
		return false
	}
	for i, w := range words {
		if toks[i].kind != tokWord || !strings.EqualFold(toks[i].text, w) {
			return false
		}
	}
	return true
}

type tokKind int

const (
	tokWord   tokKind = iota // a keyword or an identifier
	tokString                // '…' or `…` or "…"
	tokOther                 // a number or punctuation
)

// sqlToken is one token of a statement and where it is.
type sqlToken struct {
	kind       tokKind
	text       string
	start, end int
}

// lexSQL splits a ClickHouse statement into tokens, enough to find names,
// parentheses and keywords outside quoted strings.
func lexSQL(s string) ([]sqlToken, error) {
	var toks []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && strings.HasPrefix(s[i:], "--"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'' || c == '`' || c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("offset %d: unterminated %c string", i, c)
			}
			toks = append(toks, sqlToken{tokString, s[i : j+1], i, j + 1})
			i = j + 1
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, sqlToken{tokWord, s[i:j], i, j})
			i = j
		default:
			toks = append(toks, sqlToken{tokOther, s[i : i+1], i, i + 1})
			i++
		}
	}
	return toks, nil
}

// ClusterSQLFile is where the generated cluster DDL is checked in,
// relative to the repository's root.
const ClusterSQLFile = "deploy/clickhouse/cluster/schema.sql"

// ClusterSQL is the text of ClusterSQLFile: ClusterDDL(cluster) as one
// script for clickhouse-client --multiquery, each statement ending with a
// semicolon at the end of a line.
func ClusterSQL(cluster string) ([]byte, error) {
	stmts, err := ClusterDDL(cluster)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- The storage schema for the ClickHouse cluster %q: generated from\n", cluster)
	b.WriteString("-- schema/sql/*.sql by `go run ./internal/gen/clusterddl`; do not edit.\n")
	b.WriteString("-- Run it once, on any node: every statement is ON CLUSTER.\n")
	for _, s := range stmts {
		b.WriteString("\n" + s + ";\n")
	}
	return []byte(b.String()), nil
}
