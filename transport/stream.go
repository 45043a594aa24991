package transport

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// StreamConfig says how Provision sets up the streams.
type StreamConfig struct {
	// Prefix starts every subject (schema.DefaultPrefix when empty).
	Prefix string
	// Partitions is the fixed number of EVENTS partitions (>= 1).
	Partitions int
	// Duplicates is the EVENTS duplicate window: a message id seen within
	// it is not stored again (2 minutes when 0).
	Duplicates time.Duration
	// VerdictDuplicates is the VERDICTS duplicate window (Duplicates when 0).
	VerdictDuplicates time.Duration
	// MaxAge drops messages older than it from every stream (0: keep them).
	MaxAge time.Duration
	// Replicas is the number of copies of each stream (1 when 0).
	Replicas int
	// Memory keeps the streams in memory instead of files.
	Memory bool
	// Events, Verdicts and DeadLetters bound each stream (0: no bound).
	// At its bound EVENTS and VERDICTS refuse new messages (the publisher
	// gets ErrStreamFull, the gateway answers 503) rather than evicting
	// stored ones a worker may not have read; DEADLETTER, a record for
	// people, drops its oldest entries.
	Events, Verdicts, DeadLetters Limits
}

// Limits bounds one stream. Zero values mean no bound; MaxAge 0 takes
// StreamConfig.MaxAge.
type Limits struct {
	MaxBytes int64
	MaxMsgs  int64
	MaxAge   time.Duration
}

// apply sets l on sc.
func (l Limits) apply(sc *natsjs.StreamConfig) {
	sc.MaxBytes, sc.MaxMsgs = -1, -1
	if l.MaxBytes > 0 {
		sc.MaxBytes = l.MaxBytes
	}
	if l.MaxMsgs > 0 {
		sc.MaxMsgs = l.MaxMsgs
	}
	if l.MaxAge > 0 {
		sc.MaxAge = l.MaxAge
	}
}

// Subjects returns the subject names under the configured prefix.
func (c StreamConfig) Subjects() schema.Subjects {
	prefix := c.Prefix
	if prefix == "" {
		prefix = schema.DefaultPrefix
	}
	return schema.Subjects{Prefix: prefix, Partitions: c.Partitions}
}

// streams returns the configurations of EVENTS, VERDICTS and DEADLETTER.
func (c StreamConfig) streams() []natsjs.StreamConfig {
	s := c.Subjects()
	dup := c.Duplicates
	if dup == 0 {
		dup = 2 * time.Minute
	}
	vdup := c.VerdictDuplicates
	if vdup == 0 {
		vdup = dup
	}
	replicas := max(c.Replicas, 1)
	storage := natsjs.FileStorage
	if c.Memory {
		storage = natsjs.MemoryStorage
	}
	base := func(name, desc string, subjects ...string) natsjs.StreamConfig {
		return natsjs.StreamConfig{
			Name:        name,
			Description: desc,
			Subjects:    subjects,
			Retention:   natsjs.LimitsPolicy,
			Discard:     natsjs.DiscardNew,
			MaxAge:      c.MaxAge,
			Storage:     storage,
			Replicas:    replicas,
		}
	}
	events := base(schema.StreamEvents, "ponens trace events, partitioned by run", s.EventsIn())
	events.Duplicates = dup
	events.SubjectTransform = &natsjs.SubjectTransformConfig{Source: s.EventsIn(), Destination: s.PartitionTransform()}
	c.Events.apply(&events)
	verdicts := base(schema.StreamVerdicts, "ponens verdict transitions", s.VerdictsIn())
	verdicts.Duplicates = vdup
	c.Verdicts.apply(&verdicts)
	dlq := base(schema.StreamDeadLetter, "ponens refused inputs, with the reason", s.DeadLettersIn())
	dlq.Discard = natsjs.DiscardOld
	dlq.Duplicates = dup
	c.DeadLetters.apply(&dlq)
	return []natsjs.StreamConfig{events, verdicts, dlq}
}

// partitionArg finds N in "{{partition(N,…)}}".
var partitionArg = regexp.MustCompile(`\{\{\s*[pP]artition\s*\(\s*(\d+)`)

// ErrPartitionChange is what Provision returns, wrapped, when EVENTS exists
// with another partition count or partition transform.
var ErrPartitionChange = errors.New("the EVENTS partitioning cannot change")

// Provision creates the EVENTS, VERDICTS and DEADLETTER streams, or updates
// them to cfg when they exist otherwise; running it again with the same
// cfg changes nothing and only looks the streams up, so that a client
// without the right to manage streams (every role but admin) starts when
// they exist as configured. It refuses (ErrPartitionChange) to change the partition count or
// subject transform of an existing EVENTS stream: runs would move between
// partitions while workers hold their state. To repartition, drain the
// workers, delete the stream and provision it anew.
func Provision(ctx context.Context, js natsjs.JetStream, cfg StreamConfig) error {
	if cfg.Partitions < 1 {
		return fmt.Errorf("provision: partitions must be at least 1, got %d", cfg.Partitions)
	}
	for _, sc := range cfg.streams() {
		st, err := stream(ctx, js, sc.Name)
		switch {
		case errors.Is(err, natsjs.ErrStreamNotFound):
			if _, err := js.CreateStream(ctx, sc); err != nil {
				return fmt.Errorf("provision: create stream %s: %w", sc.Name, err)
			}
			continue
		case err != nil:
			return fmt.Errorf("provision: stream %s: %w", sc.Name, err)
		}
		if sc.Name == schema.StreamEvents {
			if err := checkPartitions(st.CachedInfo().Config, sc); err != nil {
				return err
			}
		}
		if sameStream(st.CachedInfo().Config, sc) {
			continue // nothing to change: looking it up is all a role without stream rights may do
		}
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("provision: update stream %s: %w", sc.Name, err)
		}
	}
	return nil
}

// checkPartitions refuses to change the subject transform of EVENTS.
func checkPartitions(have, want natsjs.StreamConfig) error {
	var haveDest string
	if have.SubjectTransform != nil {
		haveDest = have.SubjectTransform.Destination
	}
	wantDest := want.SubjectTransform.Destination
	if haveDest == wantDest {
		return nil
	}
	if m := partitionArg.FindStringSubmatch(haveDest); m != nil {
		if n, _ := strconv.Atoi(m[1]); n != partitionsOf(wantDest) {
			return fmt.Errorf("provision: stream %s has %d partitions, the configuration asks for %d: %w (a run would move to another partition while a worker holds its state); keep nats.partitions at %d, or drain the workers and delete the stream to repartition",
				schema.StreamEvents, n, partitionsOf(wantDest), ErrPartitionChange, n)
		}
	}
	return fmt.Errorf("provision: stream %s stores events by the subject transform %q, the configuration asks for %q: %w",
		schema.StreamEvents, haveDest, wantDest, ErrPartitionChange)
}

// CheckPartitions returns an error, wrapping ErrPartitionChange, when the
// EVENTS stream exists and partitions its events otherwise than subjects
// says: a worker or client using subjects would then look for runs in the
// wrong partitions. A missing stream is not an error here (Provision makes
// it).
func CheckPartitions(ctx context.Context, js natsjs.JetStream, subjects schema.Subjects) error {
	st, err := stream(ctx, js, schema.StreamEvents)
	switch {
	case errors.Is(err, natsjs.ErrStreamNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("stream %s: %w", schema.StreamEvents, err)
	}
	want := StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions}.streams()[0]
	return checkPartitions(st.CachedInfo().Config, want)
}

// stream looks a stream up. Every JetStream server answers the stream API
// (it subscribes before it accepts clients), so no responders there means
// no JetStream: ErrJetStreamNotEnabled, a refusal, where the client
// returns a bare nats.ErrNoResponders, which Unavailable must take for a
// cluster settling elsewhere (direct gets).
func stream(ctx context.Context, js natsjs.JetStream, name string) (natsjs.Stream, error) {
	st, err := js.Stream(ctx, name)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("%w (no server answers the JetStream API: not enabled, or another domain)", natsjs.ErrJetStreamNotEnabled)
	}
	return st, err
}

// partitionsOf returns N of a partition transform destination.
func partitionsOf(dest string) int {
	m := partitionArg.FindStringSubmatch(dest)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// sameStream reports whether a stream configured as have needs no update
// to be as want says: equal once the values the server fills in for what
// a configuration leaves zero (no limit, the default duplicate window) and
// its own metadata are set aside.
func sameStream(have, want natsjs.StreamConfig) bool {
	norm := func(c natsjs.StreamConfig) natsjs.StreamConfig {
		for _, n := range []*int64{&c.MaxMsgs, &c.MaxBytes, &c.MaxMsgsPerSubject} {
			if *n == 0 {
				*n = -1
			}
		}
		for _, n := range []*int{&c.MaxConsumers} {
			if *n == 0 {
				*n = -1
			}
		}
		if c.MaxMsgSize == 0 {
			c.MaxMsgSize = -1
		}
		if c.Duplicates == 0 {
			c.Duplicates = 2 * time.Minute
			if c.MaxAge > 0 && c.MaxAge < c.Duplicates {
				c.Duplicates = c.MaxAge
			}
		}
		if c.Replicas == 0 {
			c.Replicas = 1
		}
		c.Metadata = nil
		return c
	}
	return reflect.DeepEqual(norm(have), norm(want))
}

// Attach checks that the streams exist with the partition count of c,
// for a client that publishes or reads but does not manage them: their
// other settings (bounds, ages, replicas, duplicate windows) are the
// provisioner's. A stream that does not exist is an error wrapping
// natsjs.ErrStreamNotFound; another partition count is ErrPartitionChange.
func Attach(ctx context.Context, js natsjs.JetStream, c StreamConfig) error {
	for _, name := range []string{schema.StreamEvents, schema.StreamVerdicts, schema.StreamDeadLetter} {
		if _, err := stream(ctx, js, name); err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return CheckPartitions(ctx, js, c.Subjects())
}
