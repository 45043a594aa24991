// Package transport is the NATS JetStream plumbing every stage of ponens
// shares — ingest, the monitor workers, the alert stage, the sinks and the
// query side: the streams (Provision), an in-process server for `ponens
// serve` and tests (StartEmbedded), the Go publishing client agents use
// (Publisher), the dead-letter path (DeadLetters), stream usage (Usage,
// WatchLimits), and who may do what on NATS (Role, Permissions,
// ClientAuth, EnsureCredentials). It depends on schema only, so data flows
// one way through the stages that use it; transport/source is the batching
// stream reader every consumer of a stream uses, and monitor/remote asks a
// worker for a decision over it. Subject and stream names all come from
// schema.Subjects, the contract the monitor workers read by.
//
// # Streams
//
//	EVENTS      <prefix>.events.<run token>, stored by the partition()
//	            transform as <prefix>.events.p.<k>.<run token>; limits
//	            retention, MaxAge, the duplicate window for Nats-Msg-Id
//	VERDICTS    <prefix>.verdicts.>, its own duplicate window; header
//	            Ponens-Event-Time: the ts of the event the verdict is on
//	DEADLETTER  <prefix>.dlq.<reason>: headers Ponens-Error, Ponens-Reason,
//	            Ponens-Source (and Ponens-Truncated), body the refused bytes
//
// EVENTS and VERDICTS may be bounded (StreamConfig.Events, .Verdicts) and
// then discard new messages at the bound: the publisher gets ErrStreamFull
// instead of the stream evicting events no worker has read (a worker may
// replay an open run's events at a takeover, so even read ones may still
// be needed; only MaxAge removes them). DEADLETTER drops its oldest
// entries at its bound. Usage and WatchLimits say how close each is.
//
// The partition count of EVENTS is fixed once the stream exists: moving a
// run to another partition would split its events between two workers, so
// Provision refuses to change it.
//
// # Roles
//
// Every client connects in a Role (agent, gateway, worker, alert, sink,
// admin). An embedded server given Users accepts only them, each with the
// allow lists of Permissions: only workers publish verdicts and answer
// decision requests, only the alert stage publishes alerts, only admin
// manages the pipeline's streams, and each role subscribes only to its own
// reply prefix (InboxPrefix). ClientAuth turns a client's credentials
// (password, nkey seed file or creds file) and TLS files into nats.Options;
// EnsureCredentials generates and keeps a seed per role for a server that
// ponens runs without configured users. Provision changes only streams that
// differ from the configuration, so roles without stream rights start
// against streams that exist as configured. A Publisher whose connection
// the server denies publishing events fails at once.
//
// # Publishing
//
// A Publisher validates each event, publishes it asynchronously on
// schema.Subjects.Event(runId) with Nats-Msg-Id schema.EventMsgID(runId,
// seq), keeps at most MaxInFlight events unacknowledged (Publish blocks when
// that many are, which is the client's backpressure), and retries an event
// whose acknowledgement timed out or whose publish failed for a transient
// reason (disconnection, no stream responder, cluster unavailable) with the
// same message id, so that JetStream stores it once however often it is
// sent within the duplicate window. An acknowledgement that reports a
// duplicate is a success. CloseContext bounds the wait for the last
// acknowledgements, and PublishReport with Receipts says per run which
// events were acknowledged, so that a publish cut short can be repeated.
//
// A retried event may be stored after events of its run that were published
// later; workers order a run's events by seq, not by stream position.
package transport
