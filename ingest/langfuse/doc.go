// Package langfuse reads Langfuse trace exports (a trace with its
// observations, an array of traces, or an API page {"data": [...]}) and
// turns each trace into the events of one run through the mapping table
// (ingest/mapping).
//
// The run's id is the trace id; run.start carries the trace's name as the
// agent, and its sessionId, userId and tags in start.extra. Observations
// are taken in start-time order:
//
//   - TOOL: an action; the observation's name is the tool, its input the
//     arguments (an object, or a JSON string holding one), its output the
//     result; level ERROR is a failed call (statusMessage the result), an
//     end time without error a completed one;
//   - GENERATION: a telemetry event {kind: generation, name, model,
//     observationId, level};
//   - anything else (SPAN, EVENT, AGENT, CHAIN, RETRIEVER, …): counted by
//     type and skipped.
//
// An export is a finished record, so each run ends: run.error when its
// last tool call failed, else run.finish.
package langfuse
