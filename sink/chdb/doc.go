// Package chdb binds the embedded ClickHouse engine, chDB's libchdb.so, to
// Go without cgo: the library is opened at run time with purego, only when a
// store is first opened, so that every command that needs no store runs on a
// machine without it.
//
// Decisions:
//   - The binding is this package's own, a dozen functions of chDB's C API
//     (chdb_connect, chdb_query_n, chdb_result_*, chdb_close_conn). The
//     chdb-go module opens the library in an init function and panics when
//     it is missing, so the ponens binary must not import it.
//   - Queries go through chdb_query_n, which takes the SQL with a length.
//     Arrow record batches go into a table as an Arrow IPC stream written
//     to a temporary file (INSERT INTO t FROM INFILE 'f' FORMAT
//     ArrowStream), without a conversion into another format. Not inline
//     after the statement's text: the engine reads inline data only so far,
//     and a batch of a few hundred kilobytes fails (TestAppenderLargeBatch).
//   - One engine per process (the library holds global state): Open returns
//     the open engine again for the same data directory, counted, and refuses
//     a second directory while the first is open. The engine serialises its
//     calls with one mutex.
//   - The library is found, in order, at the path given to Open (config
//     store.lib), PONENS_CHDB_LIB, CHDB_LIB_PATH, then where `make deps`
//     installs it: ${XDG_CACHE_HOME:-~/.cache}/ponens/chdb/26.7.3/libchdb.so.
//     When it is not there, Open returns an error wrapping ErrNoLibrary that
//     says how to install it.
package chdb
