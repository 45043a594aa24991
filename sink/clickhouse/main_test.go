package clickhouse

import (
	"fmt"
	"os"
	"testing"

	"github.com/ponens/ponens/sink/chdb"
)

// engine is the embedded engine of the test process: the oracle of what a
// store holds for a record batch, and of what the server's formats write.
var engine *chdb.Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ponens-clickhouse-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	engine, err = chdb.Open(chdb.Options{Path: dir})
	if err == nil {
		_, err = chdb.Migrate(engine)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink/clickhouse tests: the embedded engine:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	engine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}
