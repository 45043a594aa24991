// Package mapping turns the tool calls of coding agents into ponens
// actions: one table, shared by every importer (Claude Code transcripts,
// Codex rollouts, OpenTelemetry GenAI spans, Langfuse exports) and by the
// Claude Code hook, so that an imported run and a live one are judged by
// the same rules.
//
// # The table
//
// The shipped table is default.yaml (DefaultYAML). Each rule names tools
// (exact names or path.Match globs), optionally a regular expression the
// call's shell command must contain, and what the call becomes: an action
// type (type_if_new when the call's file is new to the session, so Write
// of a new file is a CreateFile), a category, a POLICY.md capability, the
// input fields that may hold its target, and its lineage. The first rule
// that matches wins. A file given as the mapping.file setting puts its
// rules before the shipped ones, or replaces them with `replace: true`.
// Parse reports every problem with the file, line, column and key.
//
// # Actions
//
// A Session numbers the run's events (seq from 1) and actions (id from 1).
// Each call becomes an action with its type, category, capability,
// toolName, status (completed, failed, or none while the call has no
// result), a result_summary cut to MaxSummary bytes, its target as a
// FileRef evidence entry (absolute paths under the session's directory
// made relative), and a payload: the call's input object, with path set to
// the target and command to the shell command, which is what POLICY.md
// conditions read. The agent's call id is kept in extra.callId. A call
// that names several files (apply_patch) becomes one action per file.
//
// # Lineage
//
//   - edit: a completed edit produces a SourceCode artifact
//     "src:<file>@<n>" named after the file, its n-th version, derived
//     from and superseding version n-1, which the edit consumes;
//   - test: a test run consumes the current version of each file edited
//     since the last commit and produces a TestResult "test:<n>" whose
//     payload status is passed, failed or unknown;
//   - commit: a commit consumes the same files; a completed commit starts
//     a new set.
package mapping
