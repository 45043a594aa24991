package sink

import "github.com/ponens/ponens/schema"

// Appender collects one batch of records for a store. Append calls are
// cheap and write nothing; Commit writes what was appended since the last
// Commit or Rollback; Rollback discards it. An Appender is not safe for
// concurrent use: each goroutine takes its own from the store.
//
// Commit is idempotent over its records: committing a batch again (after a
// crash before its ack, or a retry after an error) leaves every count as
// one commit does.
type Appender interface {
	// AppendVerdict adds a verdict transition read from a stream at m.
	AppendVerdict(v *schema.VerdictEvent, m schema.StreamMeta) error
	// AppendEvent adds a trace event read from a stream at m; body is the
	// event's JSON as received.
	AppendEvent(e *schema.Event, body []byte, m schema.StreamMeta) error
	// AppendDeadLetter adds a dead letter read from the DEADLETTER stream
	// at m.
	AppendDeadLetter(d *schema.DeadLetter, m schema.StreamMeta) error
	// AppendRuleVersion adds a version of a rule, read at m from the
	// stream of the fleet's rule manifest.
	AppendRuleVersion(r *schema.RuleVersionRow, m schema.StreamMeta) error
	// Commit writes the batch. On an error nothing may be assumed written,
	// and the batch is still held: Commit may be called again, or Rollback.
	Commit() error
	// Rollback discards the batch.
	Rollback() error
}

// Appendable gives out Appenders.
type Appendable interface {
	Appender() Appender
}
