package clickhouse

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
)

// server opens the store of PONENS_CLICKHOUSE_DSN, migrated, or skips the
// test saying so.
func server(t *testing.T) *Store {
	t.Helper()
	dsn := os.Getenv("PONENS_CLICKHOUSE_DSN")
	if dsn == "" {
		t.Skip("no ClickHouse server: set PONENS_CLICKHOUSE_DSN (clickhouse://user:password@host:9000/db) to run the tests against one")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// Migrating again applies nothing: every migration is recorded.
func TestServerMigrate(t *testing.T) {
	s := server(t)
	applied, err := s.Migrate(context.Background())
	if err != nil || len(applied) != 0 {
		t.Fatalf("second migration applied %v, %v; want nothing", applied, err)
	}
	ms, _ := schema.Migrations()
	out, err := Querier{s.Conn()}.Query(context.Background(), "SELECT count() FROM "+schema.MigrationsTable+" FINAL", nil, "TabSeparated")
	if err != nil || strings.TrimSpace(string(out)) != itoa(len(ms)) {
		t.Fatalf("recorded migrations %q, %v; want %d", out, err, len(ms))
	}
}

// A batch committed twice is stored once, and reads back through the
// Querier with a parameter, as the embedded engine reads it.
func TestServerReplayAndQuery(t *testing.T) {
	s := server(t)
	run := "srv-" + itoa(int(time.Now().UnixNano()))
	vs := []schema.VerdictEvent{
		{RunID: run, Seq: 1, Rule: schema.RuleRef{ID: "r"}, Status: schema.StatusPending, Mode: schema.ModeObserve},
		{RunID: run, Seq: 2, Rule: schema.RuleRef{ID: "r"}, Status: schema.StatusViolated, Mode: schema.ModeObserve},
	}
	base := uint64(time.Now().UnixNano())
	for range 2 {
		a := s.Appender()
		for i := range vs {
			if err := a.AppendVerdict(&vs[i], schema.StreamMeta{Seq: base + uint64(i), Time: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	q := Querier{s.Conn()}
	out, err := q.Query(context.Background(), "SELECT seq, status FROM verdicts WHERE run_id = {run:String} ORDER BY seq", map[string]string{"run": run}, "JSONEachRow")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "\n"); got != 2 || !strings.Contains(string(out), `"violated"`) {
		t.Fatalf("rows after a replay:\n%s\nwant the 2 verdicts once", out)
	}
	if _, err := q.Query(context.Background(), "SELECT {v:String} AS v", map[string]string{"v": "it's\t\\ok"}, "TabSeparated"); err != nil {
		t.Fatalf("a parameter with a quote, a tab and a backslash: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
