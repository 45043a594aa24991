// Package clickhouse stores verdicts and events in a ClickHouse server,
// through clickhouse-go's native protocol, as the embedded engine
// (sink/chdb) stores them: the same tables and migrations, the same rows
// from the same Arrow record batches, the same insert deduplication
// tokens, and the same SQL for the query service.
//
// Decisions:
//   - The server is named by one DSN (config store.dsn, PONENS_STORE_DSN):
//     clickhouse://user:password@host1:9000,host2:9000/db?secure=true, read
//     by clickhouse-go's ParseDSN (its other parameters too: dial_timeout,
//     compress, skip_verify, tls_server_name, connection_open_strategy, and
//     any server setting). The scheme must be clickhouse (the native
//     protocol). Inserts and answers are compressed with LZ4 unless the DSN
//     names another compression. TLS (secure=true) verifies the server
//     against the system's roots; a private CA is given to the process with
//     SSL_CERT_FILE, as to any Go program. A DSN is never printed: errors
//     name the setting, not its value.
//   - A batch is a sink.NewArrowAppender: its record batches are converted
//     column by column into Go slices (Columns) and appended as column
//     blocks to one PrepareBatch per table, its token sent as the insert's
//     insert_deduplication_token setting.
//   - The server answers in Native blocks, not in a format asked for, so a
//     query whose answer is wanted in a text format (JSONEachRow, CSV, …)
//     is wrapped: SELECT formatRow('<format>', *) FROM (<query>), and each
//     row arrives already written by the server's own writer of that
//     format, byte for byte what the embedded engine writes. Parameters
//     ({name:Type}) go to the server as query parameters, never into the
//     SQL text.
package clickhouse
