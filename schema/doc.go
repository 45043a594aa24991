// Package schema holds the wire and storage contracts of ponens: the trace
// event envelope and its validation, the two trace file forms and the
// conversion between them, and the verdict artifacts of seed 001. It encodes
// and decodes only; opening files is the caller's business (see
// ingest/tracefile).
//
// # The envelope
//
// A trace is a stream of events. Each is one JSON object, an Event:
//
//	{"v": 1, "runId": "run-a", "seq": 3, "ts": "2025-10-02T08:00:09Z",
//	 "type": "action", "action": {"id": 2, "type": "EditFile", …}}
//
// v is EnvelopeVersion; runId names the run (1 to MaxRunIDLen bytes); seq
// numbers the run's events from 1 without gaps; ts is an RFC 3339 time; type
// is one of the event types below, and exactly one body field goes with it.
// event.schema.json (EventJSONSchema) states the same in JSON Schema for
// producers in other languages, and Event.Validate checks it in Go.
//
// # Event types
//
//	run.start                        body start (optional): trigger and trace-level facts
//	run.finish, run.error, run.cancel body end (optional): the outcome; closes the run
//	action                           body action: an agent step, the temporal position policies range over
//	artifact                         body artifact: a node of the typed artifact graph
//	residual                         body residual: an artifact of type Residual
//	telemetry                        body telemetry: any JSON value
//
// Only actions are positions. Artifacts, residuals and telemetry update the
// context the next action sees; an action may also carry the artifacts it
// produced inline, in Action.Artifacts, which counts as artifact events right
// after it. A run with no closing event counts as canceled (seed 001).
// Members a body does not define go in its extra object; anywhere else they
// are errors.
//
// # Ordering
//
// An event file (JSONL, DecodeJSONL) may interleave runs. Within a run, seq
// starts at 1 and increases by exactly one (ErrSeqGap, ErrSeqRepeat), and no
// event follows a terminal one (ErrAfterEnd). SplitRuns groups a stream by
// run.
//
// # Reference traces
//
// The reference checker's trace file (SEMANTICS.md §1) is one JSON object
// with trace_id, actions and artifacts, and optionally trigger,
// high_stakes_paths, residuals, telemetry, outcome and anything else.
// DecodeReference converts it to the event stream of one run whose runId is
// the trace_id:
//
//  1. run.start, carrying trigger, high_stakes_paths, agent and every other
//     top-level member in RunStart.Extra;
//  2. the actions in id order, each followed by the artifacts whose
//     producer_action_id is its id, in file order; an artifact with no
//     producer in the trace comes just before the first action that takes it
//     as input (by id or name), or right after run.start when none does;
//  3. a residual event for each entry of the legacy residuals list (the
//     entry is the payload; its id, else "residual-<n>", the artifact id);
//  4. a telemetry event for each entry of the telemetry list;
//  5. run.finish, run.error or run.cancel for an outcome of type
//     ProcessCompleted, ProcessAborted or ProcessInterrupted (or that name
//     as a bare string), with the outcome in RunEnd.Outcome. A trace file is
//     a finished record: without an outcome it ends with a run.finish marked
//     RunEnd.Implied (which EncodeReference does not write back), and an
//     outcome without a known type ends it as completed, with a warning.
//
// seq counts from 1. ts is the action's timestamp or the artifact's
// created_at when it parses as RFC 3339, else the previous event's ts; events
// before the first such time take it, and a trace without one is stamped with
// the Unix epoch.
//
// EachReferenceEvent gives the same events one at a time, for a trace too
// large to hold decoded: it indexes the actions in a first reading and
// decodes them one by one in a second.
//
// The conversion keeps everything, so that EncodeReference can write the
// trace back; it normalises only this: artifact ids, inputs, outputs,
// derived_from and supersedes become strings (a number keeps its JSON
// spelling) and single ids one-element lists; producer_action_id given as a
// string becomes an integer; an action's outputs gain the artifacts it
// produced, without duplicates; an action without a status gets the one
// DeriveStatus reads from its result_summary. Members the envelope does not
// name, and named members whose value encodes to nothing (null, "", []),
// are kept verbatim in the Extra of their action, artifact, evidence entry
// or run.start.
//
// Decode takes a file of either form and tells them apart.
//
// # Errors
//
// Problems are *FieldError values (a JSON path, what was expected, what was
// found) wrapping one of the sentinel errors; decoders wrap them in
// *DecodeError with the file, line and byte column, and return every
// problem of an input (up to 100) as DecodeErrors.
//
// # Verdict artifacts
//
// VerdictEvent is a line of a <trace>.verdicts.jsonl stream and Summary is
// summary.json, both stamped with FormatVersion. DecodeVerdicts and
// DecodeSummary refuse another formatVersion and ignore members they do not
// know, as seed 001 asks of readers.
package schema
