// Package api is the HTTP query service over the stored columns: summaries
// (summary.json of a selection of runs and rules), runs and their
// timelines and verdict streams, per-rule statistics, and the record query
// over a stored run's trace (record.go), read from a store through
// Querier.
//
// Decisions:
//   - Every value of a request reaches the store as a ClickHouse query
//     parameter ({pN:Type}); the SQL text is written by this package only
//     (stmt). Unknown parameters, values over 4 KiB, invalid UTF-8 and NUL
//     are bad_data before any query.
//   - One JSON envelope with typed error kinds mapped to status codes, as
//     Prometheus's HTTP API does (ErrorType).
//   - Summaries use schema.SummaryFold, the fold of `ponens check`; traces
//     are named by their run id (schema.RunTraceStream).
//   - Each endpoint is a method of Server taking an options struct; the
//     handlers only decode parameters.
package api
