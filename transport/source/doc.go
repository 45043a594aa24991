// Package source reads a JetStream stream in batches for a store, on a
// durable pull consumer: ReadBatch returns up to a batch of messages, the
// caller writes them, then acknowledges the batch (Ack) only after its
// write committed, or hands it back (Nak) when the write failed. A crash
// between the commit and the ack delivers the batch again, so a store
// behind a source must make a repeated batch harmless (sink.Appender's
// Commit is idempotent over its records).
//
// This is the model of Benthos' batched inputs (ReadBatch and an ack
// function called with the outcome of the write), on JetStream's explicit
// acknowledgements.
package source
