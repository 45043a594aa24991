package chdb

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// engine is the one engine of the test process, on a temporary directory.
var engine *Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ponens-chdb-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	engine, err = Open(Options{Path: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chdb tests:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	if _, err := Migrate(engine); err != nil {
		fmt.Fprintln(os.Stderr, "chdb tests: migrate:", err)
		os.Exit(2)
	}
	code := m.Run()
	engine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestQuery(t *testing.T) {
	out, err := engine.Query([]byte("SELECT 1 + 2 AS x, 'a\\tb' AS s"), "JSONEachRow")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), `{"x":3,"s":"a\tb"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestQueryError(t *testing.T) {
	_, err := engine.Query([]byte("SELEC 1"), "CSV")
	var qe *QueryError
	if !errors.As(err, &qe) || !strings.Contains(qe.Msg, "Syntax error") {
		t.Fatalf("got %v, want a syntax error from the engine", err)
	}
	// The engine goes on after an error.
	if _, err := engine.Query([]byte("SELECT 1"), "CSV"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenSamePathShares(t *testing.T) {
	e2, err := Open(Options{Path: engine.Path()})
	if err != nil {
		t.Fatal(err)
	}
	if e2 != engine {
		t.Fatal("a second Open of the same path made another engine")
	}
	if err := e2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Query([]byte("SELECT 1"), "CSV"); err != nil {
		t.Fatalf("closing one of two holds stopped the engine: %v", err)
	}
	if _, err := Open(Options{Path: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "one engine per process") {
		t.Fatalf("a second path: got %v, want a refusal", err)
	}
}

func TestNoLibrary(t *testing.T) {
	_, err := openAPI("/nonexistent/libchdb.so")
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "make deps") {
		t.Fatalf("got %v", err)
	}
}

func TestInsertArrowBytesInline(t *testing.T) {
	if err := engine.Exec("CREATE TABLE IF NOT EXISTS t_bin (s String) ENGINE = MergeTree ORDER BY s"); err != nil {
		t.Fatal(err)
	}
	// Data with NUL bytes after the query text: passed by length, not as a C string.
	q := append([]byte("INSERT INTO t_bin FORMAT RowBinary "), 3, 'a', 0, 'b')
	if _, err := engine.Query(q, ""); err != nil {
		t.Fatal(err)
	}
	out, err := engine.Query([]byte("SELECT length(s), hex(s) FROM t_bin"), "CSV")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != `3,"610062"` {
		t.Fatalf("got %s", got)
	}
}

// The engine's library must leave Go's signal handling alone: a nil
// dereference is still a recoverable panic and SIGTERM still reaches
// signal.Notify.
func TestGoSignalsAfterOpen(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		var p *int
		_ = *p
	}()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	defer signal.Stop(ch)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if s := <-ch; s != syscall.SIGTERM {
		t.Fatalf("got %v", s)
	}
}

// A library path without a directory is a file in the working directory,
// not a name the dynamic loader searches its paths for.
func TestLibPathRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	wd, _ := os.Getwd()
	if got, want := LibPath("libchdb.so"), filepath.Join(wd, "libchdb.so"); got != want {
		t.Errorf("LibPath(libchdb.so) = %q, want %q", got, want)
	}
	if got := LibPath("/opt/chdb/libchdb.so"); got != "/opt/chdb/libchdb.so" {
		t.Errorf("an absolute path changed: %q", got)
	}
}
