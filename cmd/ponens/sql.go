package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/query/analytics"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/sink/clickhouse"
)

func init() { subcommands = append(subcommands, newSQLCommand) }

func newSQLCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sql QUERY",
		Short: "Run a read-only SQL query against the stored verdicts and events",
		Long: `sql runs one read-only ClickHouse SQL query against the store (store.path,
the embedded ClickHouse engine's data directory) and prints the answer as a
table, JSON lines or CSV (a table with no rows is its header).

Only a query runs: SELECT, WITH … SELECT or EXPLAIN. The engine's own
parser reads the statement as the subquery of a SELECT, as one statement,
and only what it read runs, so anything else (INSERT, INSERT INTO FUNCTION,
ALTER, DROP, KILL, SYSTEM, SET, INTO OUTFILE, a second statement) is
refused with exit 2. The query reads the store only: file(), url() and
other table functions that reach files or the network are refused, and so
are the function file() and SETTINGS clauses (numbers() and values()
work). SHOW and DESCRIBE
cannot be subqueries and are refused too: ask system.tables and
system.columns instead.

The tables are events, verdicts, run_rule_status, runs, rule_versions,
dead_letters and record_entries, with the views violations_rule_hour,
compliance_agent_day, open_runs and run_rule_matrix (docs/storage.md
describes each).

With store.dsn (PONENS_STORE_DSN) set, the query runs on that ClickHouse
server instead, read by the server's parser the same way, so that only a
query runs (give the server a user with read-only grants all the same: on
a server, what a query may read is the user's grants).

The embedded engine is a shared library installed by ` + "`make deps`" + `; without it
sql says how to install it and exits 3, as it does when the store is in
use by another process (stop ponens serve first).`,
		Example: `  ponens sql "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name"
  ponens sql "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'verdicts'"
  ponens sql --format csv "SELECT rule_id, count() AS violations FROM verdicts FINAL WHERE status = 'violated' GROUP BY rule_id"
  ponens sql --store data/store --format json "SELECT run_id, agent, started_at FROM open_runs WHERE started_at < now() - INTERVAL 1 HOUR"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, storeFlags)
			if err != nil {
				return err
			}
			format, _ := cmd.Flags().GetString("format")
			if _, ok := analytics.Formats[format]; !ok {
				return exitWith(exitBadInput, "--format: must be %s, got %q", analytics.FormatNames, format)
			}
			if strings.TrimSpace(args[0]) == "" {
				return exitWith(exitBadInput, "no SQL given")
			}
			if cfg.Store.DSN != "" {
				return sqlServer(cmd, cfg.Store, args[0], format)
			}
			if err := storeExists(cfg.Store); err != nil {
				return err
			}
			e, err := analytics.Open(chdb.Options{Lib: cfg.Store.Lib, Path: cfg.Store.Path})
			if err != nil {
				return exitWith(exitUnavailable, "store %s: %v", cfg.Store.Path, err)
			}
			defer e.Close()
			out, err := analytics.Query(e, args[0], format)
			var qe *chdb.QueryError
			var nq *analytics.NotQueryError
			if errors.As(err, &qe) || errors.As(err, &nq) {
				return exitWith(exitBadInput, "%v", err)
			}
			if err != nil {
				return exitWith(exitUnavailable, "%v", err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	registerStore(cmd)
	cmd.Flags().String("format", "table", "output `FORMAT`: "+analytics.FormatNames)
	return cmd
}

// sqlServer runs sql on the ClickHouse server of c and prints the answer.
func sqlServer(cmd *cobra.Command, c config.StoreConfig, sql, format string) error {
	s, err := openServer(c.DSN)
	if err != nil {
		return storeExit(c, err, "")
	}
	defer s.Close()
	out, err := analytics.QueryServer(cmd.Context(), clickhouse.Querier{Conn: s.Conn()}, sql, format)
	var nq *analytics.NotQueryError
	if clickhouse.IsServerError(err) || errors.As(err, &nq) {
		return exitWith(exitBadInput, "%v", err)
	}
	if err != nil {
		return exitWith(exitUnavailable, "%v", err)
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}

// storeExists refuses an embedded store directory that the engine has not
// written (it has no metadata/ directory: missing, empty, or some other
// directory), for the commands that only read a store: opening it would
// turn it into an empty store, and a mistyped path would answer nothing
// instead of an error.
func storeExists(c config.StoreConfig) error {
	if c.DSN != "" {
		return nil
	}
	if st, err := os.Stat(filepath.Join(c.Path, "metadata")); err != nil || !st.IsDir() {
		return exitWith(exitBadInput, "store.path (--store) %s: no store there (ponens serve, ponens sink and ponens check --store write one)", c.Path)
	}
	return nil
}
