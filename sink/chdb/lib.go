package chdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ebitengine/purego"
)

// Version is the chDB release the store is built and tested against; `make
// deps` installs its library.
const Version = "26.7.3"

// ErrNoLibrary is wrapped by the error of Open when libchdb.so cannot be
// found or loaded.
var ErrNoLibrary = errors.New("the embedded ClickHouse engine (libchdb.so) is not installed")

// InstallHint tells a user how to install the library.
const InstallHint = "install it with `make deps` (from a clone of ponens), or point store.lib or PONENS_CHDB_LIB at a libchdb.so " + Version

// DefaultLibPath is where `make deps` installs the library:
// ${XDG_CACHE_HOME:-~/.cache}/ponens/chdb/<Version>/libchdb.so. It is empty
// when neither XDG_CACHE_HOME nor the home directory is known.
func DefaultLibPath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "ponens", "chdb", Version, "libchdb.so")
}

// LibPath resolves where the library is: configured when not empty, else
// PONENS_CHDB_LIB, else CHDB_LIB_PATH, else DefaultLibPath. A relative
// path is a file from the working directory (as a user means it), not a
// name for the dynamic loader to search its library paths for.
func LibPath(configured string) string {
	for _, p := range []string{configured, os.Getenv("PONENS_CHDB_LIB"), os.Getenv("CHDB_LIB_PATH")} {
		if p != "" {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
	}
	return DefaultLibPath()
}

// api is the part of chDB's C API the engine calls. Handles are C pointers
// held as uintptr: Go's collector never sees them.
type api struct {
	connect   func(argc int32, argv **byte) *uintptr
	closeConn func(conn *uintptr)
	queryN    func(conn uintptr, query *byte, queryLen uintptr, format string, formatLen uintptr) uintptr
	// queryParamsN is chdb_query_with_params_n: the query and format with
	// their lengths, then count parameter names and values, each an array
	// of pointers with an array of lengths (so a value may hold NUL).
	queryParamsN  func(conn uintptr, query *byte, queryLen uintptr, format string, formatLen uintptr, names **byte, nameLens *uintptr, values **byte, valueLens *uintptr, count uintptr) uintptr
	destroyResult func(res uintptr)
	resultBuffer  func(res uintptr) *byte
	resultLength  func(res uintptr) uintptr
	resultError   func(res uintptr) string
	resultRowsRd  func(res uintptr) uint64
	resultElapsed func(res uintptr) float64
}

var (
	libOnce sync.Mutex
	libAPI  *api
)

// load opens the library at path once per process; a later call with
// another path returns the library already loaded.
func load(path string) (*api, error) {
	libOnce.Lock()
	defer libOnce.Unlock()
	if libAPI != nil {
		return libAPI, nil
	}
	a, err := openAPI(path)
	if err != nil {
		return nil, err
	}
	libAPI = a
	return a, nil
}

// openAPI opens the library at path and finds the functions of api.
func openAPI(path string) (*api, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: no cache directory to look in; %s", ErrNoLibrary, InstallHint)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %s: not found; %s", ErrNoLibrary, path, InstallHint)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v; %s", ErrNoLibrary, path, err, InstallHint)
	}
	a := &api{}
	for _, f := range []struct {
		fn   any
		name string
	}{
		{&a.connect, "chdb_connect"},
		{&a.closeConn, "chdb_close_conn"},
		{&a.queryN, "chdb_query_n"},
		{&a.queryParamsN, "chdb_query_with_params_n"},
		{&a.destroyResult, "chdb_destroy_query_result"},
		{&a.resultBuffer, "chdb_result_buffer"},
		{&a.resultLength, "chdb_result_length"},
		{&a.resultError, "chdb_result_error"},
		{&a.resultRowsRd, "chdb_result_rows_read"},
		{&a.resultElapsed, "chdb_result_elapsed"},
	} {
		sym, err := purego.Dlsym(h, f.name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s lacks %s (is it chDB %s?): %v", ErrNoLibrary, path, f.name, Version, err)
		}
		purego.RegisterFunc(f.fn, sym)
	}
	return a, nil
}
