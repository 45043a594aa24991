// Package worker runs the monitor as a fleet service: sharded workers keyed
// by runId, consuming the partitioned EVENTS stream of NATS JetStream and
// publishing verdict transitions to the VERDICTS stream.
//
// # Ownership
//
// Each worker keeps a membership key alive in the <prefix>_workers
// key-value bucket (keys expire LeaseTTL after their last renewal). Every
// worker computes the same owner for each partition by rendezvous hashing
// over the live members, and takes a partition by creating its lease key in
// <prefix>_leases (a create fails while another worker holds it; a dead
// holder's lease expires). A worker that joins takes over only the
// partitions the hash now gives it; their owners give them up gracefully
// (last checkpoint, lease deleted). Leases were chosen over JetStream's
// pinned-client priority groups because pinning never moves a partition to a
// worker that joins: rebalancing needs an assignment every worker agrees on.
//
// # Start
//
// Run first checks the stream's partitioning, makes the buckets and writes
// the rule manifest. While NATS cannot answer (ingest.Unavailable: requests
// timing out, as in a cluster without a quorum, or JetStream temporarily
// unavailable) it waits and tries again as long as its context lasts; a
// refusal (a partitioning, replica count or permission the server rejects,
// a manifest entry that does not parse) ends it with the error.
//
// # Exactly-once verdicts
//
// A partition is consumed, in stream order, by a durable pull consumer that
// its owner recreates at takeover. Every verdict is published with a message
// id built from runId, rule and seq, so the verdicts stream stores it once
// however often it is sent. Every CheckpointEvery the partition waits until
// the verdicts it sent are stored, writes a checkpoint (the stream sequence
// it covers and the runs open then, each with the stream sequence of its
// first event) to <prefix>_checkpoints, and only then acks the events (ack
// all). A new owner loads the checkpoint and consumes from the first event
// of the earliest open run: events up to the checkpoint rebuild the open
// runs with verdicts suppressed (replay is deterministic, so the state is
// the one that was checkpointed), later ones are processed as usual. Verdicts
// that were stored after the checkpoint are sent again and deduplicated by
// the stream, within its duplicate window.
//
// Ack all acks every earlier delivery too, so the partition checks the
// consumer's delivery sequence: a hole in it is a message the server sent
// that never arrived (a connection lost while a fetch was on its way, or
// deliveries a consumer leader still had queued when it stepped down), and
// at the next delivery the partition fails and starts again from its
// checkpoint rather than ack past it. (A lost last message is delivered
// again after the consumer's ack wait, a minute.) A delivery sequence that
// goes back (a consumer reset after the stream moved back) brings
// duplicates, which the runs ignore.
//
// # Per run
//
// A run of the checkpoint whose first events the stream no longer holds
// (its MaxAge) cannot be rebuilt: it is ended with an error log line, and
// its later events are after-end dead letters.
//
// A repeated seq is ignored when its bytes are those applied under it (an
// FNV-1a hash per applied seq, for a run's first maxSums seqs) or those
// waiting in the buffer; other bytes are a conflicting-duplicate dead
// letter. An event ahead of the next expected seq waits
// in a bounded buffer; a gap that does not close within GapTimeout becomes
// a dead letter (reason seq-gap) and a violated verdict of the built-in rule
// ponens.stream_integrity, and the run continues at the next event it has;
// a missing event that arrives after that is a dead letter too (seq-gap),
// and replay skips the same seqs (they are in the checkpoint).
// A run with no event for IdleAfter ends as ended without run.finish: its
// pending rules become unresolved. Events that do not decode or validate,
// are too large, arrive after their run ended, or name another run than
// the subject they were published on (run-mismatch: judging it would split
// a run between partitions) are dead letters with the reason and the
// original payload.
//
// # Rules
//
// The rules in force are recorded in the <prefix>_rules key-value bucket,
// the rule manifest (RuleHistory): each rule id with every meaning it has
// had (ruleset.Set.Meaning). A rule whose meaning differs from its latest
// version gets a new version, and its verdicts carry "<id>@<version>" from
// then on. Reload puts a new rule set in force without losing run state:
// each owned partition checkpoints and starts again, replaying its open
// runs. A checkpoint records the verdict ids of its rules; replay sends the
// verdicts of the rules in force now but not then, so a new rule or version
// judges every open run from its start, and a crash in the middle repeats
// nothing (message ids).
//
// # Decisions
//
// The owner of a partition answers <prefix>.decide.<k> requests
// ({"runId", "action"}) with the run's decision (monitor.Decision), so an
// agent asks the worker that holds its run's state.
package worker
