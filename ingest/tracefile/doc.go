// Package tracefile reads trace files from disk: an event stream (JSONL,
// one envelope per line) or a reference trace (one JSON object), told apart
// and decoded by schema.Decode, and returns their runs.
package tracefile
