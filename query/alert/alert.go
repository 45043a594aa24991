// Package alert is the alert stage: it consumes the VERDICTS stream on its
// own durable consumer, in batches through transport/source as the sink
// does, and announces every violation on the alerts subject
// of its rule (<prefix>.alerts.<rule token>), where subscribers listen.
// Because it reads the stream rather than the workers, it restarts
// independently of them and misses nothing while it is down.
package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	segjson "github.com/segmentio/encoding/json"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport/source"
)

// Dispatcher forwards violations from the verdicts stream to alert subjects.
type Dispatcher struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	subjects schema.Subjects
	durable  string
	// Notifier, when set, also delivers each verdict to the stored
	// subscriptions before the verdict is acknowledged.
	Notifier *Notifier
}

// New returns a dispatcher; durable names its consumer (one per deployment).
func New(nc *nats.Conn, js jetstream.JetStream, subjects schema.Subjects, durable string) *Dispatcher {
	return &Dispatcher{nc: nc, js: js, subjects: subjects, durable: durable}
}

// Alert is what an alert subject carries: the violated verdict and when the
// dispatcher saw it.
type Alert struct {
	Verdict schema.VerdictEvent `json:"verdict"`
	// Agent, Project and Severity are the run's agent and project and the
	// rule's declared severity, as the worker knew them.
	Agent    string    `json:"agent,omitempty"`
	Project  string    `json:"project,omitempty"`
	Severity string    `json:"severity,omitempty"`
	At       time.Time `json:"at"`
}

// Route is what a verdict message's headers say beside the verdict: the
// rule's id in its file (set when the verdict is of a later version), the
// run's agent and project, and the rule's severity.
type Route struct {
	Rule, Agent, Project, Severity string
}

// RouteOf reads the route of a verdict message from its headers.
func RouteOf(h nats.Header) Route {
	return Route{Rule: h.Get(schema.HeaderRule), Agent: h.Get(schema.HeaderAgent), Project: h.Get(schema.HeaderProject), Severity: h.Get(schema.HeaderSeverity)}
}

// batchRows is the most verdicts the stage reads in one batch.
const batchRows = 512

// Run forwards alerts until ctx ends. It reads the verdicts stream in
// batches through a durable source (transport/source), eagerly: a batch is
// whatever verdicts are there, so a lone violation is not held back to fill
// one. The verdicts of a batch are forwarded one after another, in stream
// order, and the batch is acknowledged only after every one of them was
// delivered: a batch lost in flight (a reconnection, a crash) is delivered
// again, never acked unseen. A message that does not decode is logged and
// acked with its batch (it cannot be an alert, and retrying it would not
// change that). The notifier's grouped notifications are flushed beside it,
// and Run returns once both stopped.
func (d *Dispatcher) Run(ctx context.Context) error {
	src, err := d.source(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		if d.Notifier != nil {
			d.Notifier.flushLoop(ctx)
		}
	}()
	defer func() { cancel(); <-flushed }()
	for ctx.Err() == nil {
		b, err := src.ReadBatch(ctx, 100*time.Millisecond)
		switch {
		case ctx.Err() != nil:
			_ = b.Nak(0)
			return nil
		case err != nil:
			return fmt.Errorf("alert: %w", err)
		}
		if err := d.forwardBatch(ctx, b); err != nil {
			if ctx.Err() != nil {
				return nil // not acknowledged: delivered again after the restart
			}
			return err
		}
	}
	return nil
}

// forwardBatch forwards the verdicts of b in order and acknowledges them.
// When one cannot be delivered, those before it are acknowledged, it and
// the rest are handed back, and its error is returned.
func (d *Dispatcher) forwardBatch(ctx context.Context, b source.Batch) error {
	for i, m := range b.Msgs {
		if err := d.forward(ctx, m.Data(), RouteOf(m.Headers())); err != nil {
			done, rest := source.Batch{Msgs: b.Msgs[:i]}, source.Batch{Msgs: b.Msgs[i:]}
			_ = rest.Nak(0)
			if aerr := done.Ack(context.WithoutCancel(ctx)); aerr != nil {
				err = errors.Join(err, fmt.Errorf("alert: %w", aerr))
			}
			return err
		}
	}
	if err := b.Ack(ctx); err != nil {
		return fmt.Errorf("alert: %w", err)
	}
	return nil
}

// source opens the durable consumer, with explicit acks. A consumer of
// that name with another ack policy (made by a development build between
// releases) cannot be changed in place; replacing it could lose its place
// in the stream, so the dispatcher refuses to start and says what to do.
func (d *Dispatcher) source(ctx context.Context) (*source.Source, error) {
	src, err := source.Open(ctx, d.js, source.Options{Stream: schema.StreamVerdicts, Durable: d.durable, Filter: d.subjects.VerdictsIn(), BatchRows: batchRows, Eager: true})
	if err == nil {
		return src, nil
	}
	if old, oerr := d.js.Consumer(ctx, schema.StreamVerdicts, d.durable); oerr == nil {
		if p := old.CachedInfo().Config.AckPolicy; p != jetstream.AckExplicitPolicy {
			return nil, fmt.Errorf("alert: consumer %s on stream %s has ack policy %s, this build needs explicit acks; delete it (nats consumer rm %s %s) and the alert stage starts it again from the stream's first verdict: %w",
				d.durable, schema.StreamVerdicts, p, schema.StreamVerdicts, d.durable, err)
		}
	}
	return nil, fmt.Errorf("alert: %w", err)
}

// statusOnly is the part of a verdict read to skip the ones that are not
// violations without decoding them whole.
type statusOnly struct {
	Status schema.VerdictStatus `json:"status"`
}

// forward announces the verdict in data if it is a violation, on the alert
// subject of r.Rule (the rule's id in its file, when the verdict is of a
// later version) or else of the verdict's rule.
func (d *Dispatcher) forward(ctx context.Context, data []byte, r Route) error {
	var s statusOnly
	if _, err := segjson.Parse(data, &s, 0); err == nil && s.Status == schema.StatusSatisfied {
		return nil
	}
	var v schema.VerdictEvent
	if err := json.Unmarshal(data, &v); err != nil {
		slog.Warn("alert: a message of the verdicts stream is not a verdict", "err", err)
		return nil
	}
	if d.Notifier != nil && v.Status != schema.StatusSatisfied {
		if err := d.Notifier.Notify(ctx, v, r); err != nil {
			return err
		}
	}
	if v.Status != schema.StatusViolated {
		return nil
	}
	payload, err := json.Marshal(Alert{Verdict: v, Agent: r.Agent, Project: r.Project, Severity: r.Severity, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	rule := r.Rule
	if rule == "" {
		rule = v.Rule.ID
	}
	if err := d.nc.Publish(d.subjects.Alert(rule), payload); err != nil {
		return fmt.Errorf("alert: publish: %w", err)
	}
	return nil
}
