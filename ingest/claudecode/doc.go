// Package claudecode reads Claude Code session transcripts and hook
// input, and turns them into ponens trace events through the mapping
// table (ingest/mapping).
//
// A transcript (~/.claude/projects/<project>/<session>.jsonl) holds one
// JSON object per line with type, uuid, parentUuid, sessionId, timestamp,
// cwd and message. Assistant lines carry tool_use blocks {id, name,
// input} in message.content; user lines carry tool_result blocks
// {tool_use_id, content, is_error}. The importer makes:
//
//   - run.start at the first line that names a session: runId is the
//     sessionId, agent "claude-code", trigger UserRequest, and cwd,
//     version, gitBranch and sessionId in start.extra;
//   - one action per tool call when its result arrives (status failed when
//     is_error, else completed), so seq follows the order in which calls
//     completed; the action's timestamp is when the call was made, the
//     event's ts when its result arrived;
//   - at the end of a file (Flush), an action without a status for each
//     call that never got a result.
//
// Every other line (prompts, text, thinking, summaries, file-history
// snapshots, system lines, results of calls not seen) is counted by kind
// in Skipped and explained to Explain; a line that is not a JSON object is
// an error naming the file, line and byte column. No terminal event is
// made: a transcript does not say that its session is over.
package claudecode
