// Package watch follows agent session transcripts as they are written
// (Claude Code under ~/.claude/projects, Codex under
// $CODEX_HOME/sessions) and publishes their events as they appear.
//
// A Watcher passes over its directory every Interval: for each *.jsonl
// file it reads the complete lines written since the last pass (a line
// still being written waits for its newline), hands them to the file's
// importer and publishes the events they complete, in order. A line that
// cannot be read is logged with its file and line and skipped.
//
// Restart safety: the state file records, per transcript, the last seq
// of its run that was stored. A restarted watcher reads each transcript
// again from its start, so its importer knows the whole session (pending
// calls, lineage, numbering), and publishes only the events past that
// seq: each event is published once, in order. Publishing also carries
// the message id runId:seq, so the stream drops a repeat within its
// duplicate window. A failed publish is tried again on the next pass.
package watch
