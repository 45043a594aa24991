package chdb

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
)

// Options open an engine.
type Options struct {
	// Lib is the path of libchdb.so; empty resolves it with LibPath.
	Lib string
	// Path is the data directory; it is created when missing.
	Path string
	// ReadOnly refuses every statement that would change data or settings
	// (ClickHouse's readonly=1).
	ReadOnly bool
}

// Engine is the embedded ClickHouse engine of the process. It is safe for
// concurrent use: calls are serialised.
type Engine struct {
	mu     sync.Mutex
	api    *api
	handle *uintptr // what chdb_connect returned; *handle is the connection
	path   string
	refs   int
}

var (
	procMu  sync.Mutex
	procEng *Engine
)

// ErrInUse is wrapped by the error of Open when another process has the
// data directory open.
var ErrInUse = errors.New("the store is open in another process (ponens serve, sink or query): stop it first, or ask its query service")

// ErrClosed is returned by calls on an engine that was closed.
var ErrClosed = errors.New("chdb: engine closed")

// Open returns the engine of the process on opts.Path, starting it when it
// is not running. Opening the path that is already open returns the same
// engine (each Open needs its Close); another path is refused while one is
// open, since the library holds one engine per process.
func Open(opts Options) (*Engine, error) {
	if opts.Path == "" {
		return nil, errors.New("chdb: no data directory (store.path)")
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("chdb: store.path %q: %w", opts.Path, err)
	}
	procMu.Lock()
	defer procMu.Unlock()
	if e := procEng; e != nil {
		if e.path != abs {
			return nil, fmt.Errorf("chdb: the engine of this process is open on %s; cannot open %s too (one engine per process)", e.path, abs)
		}
		e.mu.Lock()
		e.refs++
		e.mu.Unlock()
		return e, nil
	}
	if inUse(abs) {
		return nil, fmt.Errorf("chdb: %s: %w", abs, ErrInUse)
	}
	a, err := load(LibPath(opts.Lib))
	if err != nil {
		return nil, err
	}
	args := []string{"clickhouse", "--path=" + abs}
	if opts.ReadOnly {
		args = append(args, "--readonly=1")
	}
	h, err := connect(a, args)
	if err != nil {
		return nil, fmt.Errorf("chdb: open %s: %w", abs, err)
	}
	procEng = &Engine{api: a, handle: h, path: abs, refs: 1}
	return procEng, nil
}

// connect calls chdb_connect with args as C strings.
func connect(a *api, args []string) (*uintptr, error) {
	cstr := make([][]byte, len(args))
	argv := make([]*byte, len(args)+1)
	for i, s := range args {
		cstr[i] = append([]byte(s), 0)
		argv[i] = &cstr[i][0]
	}
	var h *uintptr
	keepGoSignals(func() { h = a.connect(int32(len(args)), &argv[0]) })
	runtime.KeepAlive(cstr)
	runtime.KeepAlive(argv)
	if h == nil || *h == 0 {
		return nil, errors.New("chdb_connect failed (is the directory used by another process?)")
	}
	return h, nil
}

// Path is the absolute data directory of the engine.
func (e *Engine) Path() string { return e.path }

// Query runs one statement and returns its output in format (a ClickHouse
// output format such as JSONEachRow, CSVWithNames or ArrowStream; empty for
// statements that return nothing). The statement may carry data after its
// text (INSERT … FORMAT ArrowStream followed by the bytes): query is passed
// with its length, not as a C string.
func (e *Engine) Query(query []byte, format string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refs == 0 {
		return nil, ErrClosed
	}
	if len(query) == 0 {
		return nil, errors.New("chdb: empty query")
	}
	if format == "" {
		format = "TabSeparated"
	}
	res := e.api.queryN(*e.handle, &query[0], uintptr(len(query)), format, uintptr(len(format)))
	runtime.KeepAlive(query)
	return e.takeResult(res)
}

// Exec runs statements that return nothing, in order, and stops at the
// first error.
func (e *Engine) Exec(stmts ...string) error {
	for _, s := range stmts {
		if _, err := e.Query([]byte(s), ""); err != nil {
			return err
		}
	}
	return nil
}

// Close releases this Open's hold on the engine; the last Close stops it.
// The library stays loaded: a later Open starts the engine again.
func (e *Engine) Close() error {
	procMu.Lock()
	defer procMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refs == 0 {
		return ErrClosed
	}
	e.refs--
	if e.refs > 0 {
		return nil
	}
	e.api.closeConn(e.handle)
	e.handle = nil
	if procEng == e {
		procEng = nil
	}
	return nil
}

// QueryError is an error the engine reported for a statement, in
// ClickHouse's words (which name the code, the position and what was
// expected).
type QueryError struct {
	Msg string
}

func (q *QueryError) Error() string { return "clickhouse: " + q.Msg }
