// Package sink defines the output seam of the pipeline: an Appender takes
// the verdicts and events of one batch and writes them all on Commit, or
// none on Rollback, as Prometheus's storage.Appender does. The stores live
// under it: sink/chdb (the embedded ClickHouse engine) and sink/file (the
// files of a check).
//
// A batch is acknowledged on its stream only after Commit returned nil, so
// a crash between the two re-delivers the batch; stores make that harmless
// by keying every row by its record (run and seq; run, rule and seq) and
// versioning it by its stream sequence.
package sink
