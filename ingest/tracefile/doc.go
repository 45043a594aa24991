// Package tracefile reads trace files from disk: an event stream (JSONL,
// one envelope per line) or a reference trace (one JSON object), told apart
// and decoded by schema.Decode, and returns their runs. Scan and
// ScanBatches hand an event stream's events as its lines are read, and
// EachReferenceEvent a clean reference trace's as its actions are decoded.
package tracefile
