// Package otlp receives OpenTelemetry spans that follow the GenAI semantic
// conventions, over OTLP/HTTP (POST /v1/traces) or from exported files,
// and turns them into ponens trace events through the mapping table
// (ingest/mapping).
//
// Requests are ExportTraceServiceRequests decoded with
// go.opentelemetry.io/collector/pdata (its JSON decoder reads the hex trace
// and span ids of OTLP/JSON), in application/json or
// application/x-protobuf, gzip or not, up to a size limit (20 MiB by
// default; 413 above it).
//
// # Mapping
//
// The operation of a span is gen_ai.operation.name, else the first word
// of its name when that names an operation.
//
//   - A run is keyed by gen_ai.conversation.id (of the span or an ancestor
//     in the same request), else the trace id; once a trace is in a run,
//     its later spans go there too. Its run.start carries the agent
//     (gen_ai.agent.name, else gen_ai.agent.id, else the resource's
//     service.name) and the provider in extra (gen_ai.provider.name, or
//     gen_ai.system of the conventions before 1.37).
//   - execute_tool: an action; the tool is gen_ai.tool.name (else the rest
//     of the span name) through the mapping table, the arguments
//     gen_ai.tool.call.arguments (structured, or a JSON string), the
//     result gen_ai.tool.call.result, the status failed when the span's
//     status is Error. An execute_tool span without a tool name cannot be
//     evaluated: it is rejected, and the receiver's partial_success counts
//     it and says why.
//   - chat, text_completion, generate_content, embeddings: model calls,
//     telemetry by default; as actions (tool "gen_ai.<operation>", a
//     ModelCall in the shipped table) or nothing with Options.ModelCalls.
//   - invoke_agent: the root agent span of a run (no invoke_agent span
//     among its ancestors in the same request) closes it when it ends:
//     run.finish, or run.error when its status is Error. Later spans of a
//     closed run are rejected.
//   - Any other span is counted and skipped.
//
// Spans are taken in the order they ended, so a run's actions follow the
// order its tools completed. A Converter keeps runs open between requests
// in memory: a receiver that restarts starts numbering a run still open
// from 1 again, so a run should be exported by one receiver process.
package otlp
