// Package codex reads Codex CLI session rollouts
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl) and turns them into
// ponens trace events through the mapping table (ingest/mapping).
//
// Each rollout line is {timestamp, type, payload}. The importer makes:
//
//   - run.start from session_meta: runId is payload.id, agent "codex",
//     and cwd, originator, cliVersion and sessionId in start.extra;
//   - one action per tool call when its output arrives: a function_call
//     {name, arguments (a JSON string), call_id}, a custom_tool_call
//     {name, input, call_id} or a local_shell_call {action.command,
//     call_id}, completed by the function_call_output or
//     custom_tool_call_output with the same call_id. The status is failed
//     when the output reports a nonzero exit code (JSON metadata.exit_code
//     or exit_code, or an "Exit code: N" line) or success false;
//   - apply_patch (a custom tool, a function, or a shell argv starting with
//     apply_patch) names its files in the patch ("*** Update File:",
//     "*** Add File:", "*** Delete File:"): one action per file, an added
//     file a CreateFile;
//   - at the end (Flush), calls without output, without a status.
//
// The format changes between Codex versions: lines of any other type
// (turn_context, event_msg, compacted, …) and response items of any other
// type (message, reasoning, …) are counted by kind in Skipped, never
// fatal. A line that is not a JSON object is an error naming the file,
// line and column.
package codex
