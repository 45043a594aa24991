package schema

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// Subjects and streams of the streaming pipeline (DESIGN.md §3). Every name
// starts with a configurable prefix (DefaultPrefix); Subjects builds them.
//
//   - Agents publish each event on <prefix>.events.<run token>. The EVENTS
//     stream listens there and, with JetStream's deterministic partition()
//     subject transform, stores it as <prefix>.events.p.<k>.<run token>, k in
//     [0, Partitions): one run always lands on one partition.
//   - Workers publish verdict transitions on <prefix>.verdicts.<k>.<run token>
//     (stream VERDICTS), invalid events on <prefix>.dlq.<reason> (stream
//     DEADLETTER), and the alert stage publishes violations on
//     <prefix>.alerts.<rule token>.
//
// A run token is the runId itself when it is made only of ASCII letters,
// digits, '-' and '_' and does not start with '~'; otherwise it is '~'
// followed by the runId in unpadded base64url. Message ids (Nats-Msg-Id)
// are <run token>:<seq> for events and <run token>:<rule token>:<seq> for
// verdicts.
const DefaultPrefix = "ponens"

// DefaultPartitions is the number of EVENTS partitions when none is
// configured. Each partition's consumer reads past the events of the other
// partitions to find its own, so a partition costs CPU on every event
// (docs/LOAD.md measures it): choose about as many as monitor workers will
// ever share the stream.
const DefaultPartitions = 8

// plainToken reports whether s is a run token as it is: one or more ASCII
// letters, digits, '-' and '_'. It is on every event's path (subject and
// message id), so it is a loop rather than a regular expression.
func plainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// RunToken encodes a runId as one subject token.
func RunToken(runID string) string {
	if plainToken(runID) {
		return runID
	}
	return "~" + base64.RawURLEncoding.EncodeToString([]byte(runID))
}

// ParseRunToken decodes a run token back into the runId.
func ParseRunToken(tok string) (string, error) {
	if !strings.HasPrefix(tok, "~") {
		if !plainToken(tok) {
			return "", fmt.Errorf("run token %q: not a valid token", tok)
		}
		return tok, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok[1:])
	if err != nil {
		return "", fmt.Errorf("run token %q: %w", tok, err)
	}
	return string(b), nil
}

// Subjects names the subjects and streams under one prefix.
type Subjects struct {
	Prefix     string
	Partitions int
}

// Stream names.
const (
	StreamEvents     = "EVENTS"
	StreamVerdicts   = "VERDICTS"
	StreamDeadLetter = "DEADLETTER"
)

// Event is the subject an agent publishes an event of runID on.
func (s Subjects) Event(runID string) string { return s.Prefix + ".events." + RunToken(runID) }

// EventsIn is the subject filter of the EVENTS stream.
func (s Subjects) EventsIn() string { return s.Prefix + ".events.*" }

// PartitionTransform is the EVENTS stream's subject transform destination.
func (s Subjects) PartitionTransform() string {
	return fmt.Sprintf("%s.events.p.{{partition(%d,1)}}.{{wildcard(1)}}", s.Prefix, s.Partitions)
}

// PartitionOf is the partition JetStream's partition() transform puts runID
// on: FNV-1a of the run token, modulo the partition count. Clients use it to
// address the decision service of the worker that owns the run.
func (s Subjects) PartitionOf(runID string) int {
	h := fnv.New32a()
	h.Write([]byte(RunToken(runID)))
	return int(h.Sum32() % uint32(s.Partitions))
}

// Partition is the subject filter of partition k as stored.
func (s Subjects) Partition(k int) string { return fmt.Sprintf("%s.events.p.%d.*", s.Prefix, k) }

// Verdict is the subject of a verdict of runID from partition k.
func (s Subjects) Verdict(k int, runID string) string {
	return fmt.Sprintf("%s.verdicts.%d.%s", s.Prefix, k, RunToken(runID))
}

// VerdictsIn is the subject filter of the VERDICTS stream.
func (s Subjects) VerdictsIn() string { return s.Prefix + ".verdicts.>" }

// DeadLetter is the subject of a dead letter with the given reason code.
func (s Subjects) DeadLetter(reason string) string { return s.Prefix + ".dlq." + reason }

// DeadLettersIn is the subject filter of the DEADLETTER stream.
func (s Subjects) DeadLettersIn() string { return s.Prefix + ".dlq.>" }

// Alert is the subject violations of ruleID are announced on.
func (s Subjects) Alert(ruleID string) string { return s.Prefix + ".alerts." + RunToken(ruleID) }

// Decide is the request subject of the decision service for partition k.
func (s Subjects) Decide(k int) string { return fmt.Sprintf("%s.decide.%d", s.Prefix, k) }

// The key-value buckets of the monitor workers (Subjects.Bucket).
const (
	BucketWorkers     = "workers"     // the live workers
	BucketLeases      = "leases"      // who owns each partition
	BucketCheckpoints = "checkpoints" // each partition's checkpoint
	BucketRules       = "rules"       // the rule manifest
	BucketAlerts      = "alerts"      // the alert subscriptions, silences and delivery state
)

// Bucket is the name of the workers' key-value bucket name (BucketWorkers…)
// under the prefix: <prefix>_<name>.
func (s Subjects) Bucket(name string) string { return s.Prefix + "_" + name }

// EventMsgID is the Nats-Msg-Id of an event: publishing it twice stores it
// once.
//
// Message ids carry run tokens (RunToken), not raw runIds: nats.go trims
// white space around header values and turns CR and LF into spaces, so the
// runIds "a\n" and "a " would otherwise share message ids and the second
// run's events would be dropped as duplicates. For every runId that is a
// valid token the two are the same.
func EventMsgID(runID string, seq uint64) string {
	return RunToken(runID) + ":" + strconv.FormatUint(seq, 10)
}

// VerdictMsgID is the Nats-Msg-Id of a verdict: the run token, the rule id
// as a token, the seq and the status. The status is part of it because a
// rule can change twice at one seq: a run that ends without a terminal
// event (idle, or cut off) gets its end-of-run verdict at the seq of its
// last event, which the step's own verdict (pending) already carries; the
// two are different transitions and must both be stored.
func VerdictMsgID(v *VerdictEvent) string {
	return RunToken(v.RunID) + ":" + RunToken(v.Rule.ID) + ":" + strconv.FormatUint(v.Seq, 10) + ":" + string(v.Status)
}

// Headers a worker sets on a verdict message, when it knows them, for the
// readers that route verdicts (the alert stage): the agent and project of
// the run (from its run.start, the project from its extra field
// "project"), and the declared severity of the rule. The verdict's JSON is
// the verdict stream's line and carries none of them.
const (
	HeaderAgent    = "Ponens-Agent"
	HeaderProject  = "Ponens-Project"
	HeaderSeverity = "Ponens-Severity"
)

// HeaderRule is set on a verdict message of a rule whose meaning changed:
// the rule's id in its file, while the verdict carries the id of the
// version (<id>@<version>). The alert stage announces it on the rule's own
// alert subject, so subscribers keep receiving a rule's alerts across its
// versions.
const HeaderRule = "Ponens-Rule"

// Dead-letter headers: why an event was refused, and where.
const (
	HeaderError  = "Ponens-Error"  // the message: file/line/field and what was expected
	HeaderReason = "Ponens-Reason" // a stable code: malformed, invalid, unknown-type, too-large, seq-gap, seq-repeat, after-end, run-mismatch
	HeaderSource = "Ponens-Source" // where it came from: gateway, worker, publish
)

// HeaderHash is set on each event published by the Go client: the hex
// SHA-256 of the message body. When JetStream reports a publish as a
// duplicate (the message id seen before), the client compares it with the
// stored message's to tell a retry from a conflicting event.
const HeaderHash = "Ponens-Hash"

// HeaderEventTime is set on each verdict message a worker publishes: the
// time (ts) of the event the verdict is on, in RFC 3339 with milliseconds
// (FormatEventTime). The store stamps the verdict's row with it; a verdict
// message without it (published by an older worker) is stamped with the time
// the stream stored it.
const HeaderEventTime = "Ponens-Event-Time"

// FormatEventTime is t as HeaderEventTime carries it: RFC 3339 in UTC with
// milliseconds.
func FormatEventTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// HeaderTruncated is set on a dead letter whose body is only the first bytes
// of what was refused (too large to keep whole); its value is the size of the
// original input in bytes.
const HeaderTruncated = "Ponens-Truncated"

// Dead-letter reasons: the stable codes of HeaderReason, also the last token
// of the dead-letter subject (Subjects.DeadLetter).
const (
	ReasonMalformed   = "malformed"    // not well-formed JSON
	ReasonInvalid     = "invalid"      // well-formed, but a field is missing, unknown or wrong
	ReasonUnknownType = "unknown-type" // an event type this build does not know
	ReasonTooLarge    = "too-large"    // an event or a request over its size limit
	ReasonSeqGap      = "seq-gap"      // a run's seq skipped a number
	ReasonSeqRepeat   = "seq-repeat"   // a run's seq did not increase
	ReasonAfterEnd    = "after-end"    // an event after the run's terminal event
	// ReasonConflictingDuplicate: the run and seq of a stored event, with
	// other content.
	ReasonConflictingDuplicate = "conflicting-duplicate"
	ReasonRunMismatch          = "run-mismatch" // an event whose runId is not the run of the subject it came on
)

// Dead-letter sources: the values of HeaderSource.
const (
	SourceGateway = "gateway" // the HTTP ingest gateway
	SourceWorker  = "worker"  // a monitor shard worker
	SourcePublish = "publish" // the Go client or `ponens publish`
)

// DeadLetterReason classifies err, an error of this package (a *FieldError,
// *DecodeError or DecodeErrors, possibly wrapped), as a dead-letter reason.
// When err holds several problems the most basic one decides: malformed
// JSON, then too large, unknown type, the ordering problems, and anything
// else is invalid.
func DeadLetterReason(err error) string {
	for _, r := range []struct {
		sentinel error
		reason   string
	}{
		{ErrMalformedJSON, ReasonMalformed},
		{ErrTooLarge, ReasonTooLarge},
		{ErrUnknownType, ReasonUnknownType},
		{ErrSeqGap, ReasonSeqGap},
		{ErrSeqRepeat, ReasonSeqRepeat},
		{ErrAfterEnd, ReasonAfterEnd},
		{ErrConflictingDuplicate, ReasonConflictingDuplicate},
	} {
		if errors.Is(err, r.sentinel) {
			return r.reason
		}
	}
	return ReasonInvalid
}

// DecodeEvent decodes and validates one event, the JSON object in data, as
// DecodeJSONL does each line but without the ordering checks, which need the
// rest of the run; data may span several lines. name is used in errors.
// When the event is refused the error is a DecodeErrors with every problem
// found (the line and column within data, the field, the sentinel).
//
// (It lives here only because subject.go is the schema file the streaming
// work may add to; its place is jsonl.go.)
func DecodeEvent(name string, data []byte) (Event, error) {
	data = bytes.TrimRight(data, " \t\r\n")
	if len(bytes.TrimSpace(data)) == 0 {
		return Event{}, DecodeErrors{newDecodeError(name, 1, 1, &FieldError{Err: ErrMalformedJSON, Expected: "an event object", Got: "nothing"})}
	}
	ev, problems := decodeEvent(data)
	if len(problems) == 0 {
		return ev, nil
	}
	errs := errorList{file: name}
	for _, p := range problems {
		line, col := lineCol(data, min(max(p.off, 0), len(data)))
		errs.add(line, col, p.err)
	}
	return Event{}, errs.err()
}
