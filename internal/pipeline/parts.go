package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/query/record/stored"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/transport"
)

// WorkersOptions are the monitor workers of a pipeline.
type WorkersOptions struct {
	// IDs name the workers, one each, unique among the live workers.
	IDs []string
	// Worker is every worker's options; ID is set from IDs, and Subjects,
	// DeadLetter (logged and stored on the DEADLETTER stream) and Violated
	// (logged) are filled in when unset.
	Worker worker.Options
}

func (p *Pipeline) addWorkers(o WorkersOptions) error {
	nc, js, err := p.conn(transport.RoleWorker)
	if err != nil {
		return err
	}
	wo := o.Worker
	if wo.Subjects == (schema.Subjects{}) {
		wo.Subjects = p.o.Subjects
	}
	if wo.Logger == nil {
		wo.Logger = p.o.Logger
	}
	if wo.DeadLetter == nil {
		dl := LoggedDeadLetters{Sink: transport.NewDeadLetters(js, wo.Subjects), Log: p.o.Logger}
		wo.DeadLetter = func(ctx context.Context, reason string, err error, payload []byte) error {
			return dl.Send(ctx, reason, schema.SourceWorker, err, payload)
		}
	}
	if wo.Violated == nil {
		wo.Violated = LogViolation(p.o.Logger)
	}
	for _, id := range o.IDs {
		wo.ID = id
		w, err := worker.New(nc, js, wo)
		if err != nil {
			return &UnavailableError{Err: err}
		}
		p.workers = append(p.workers, w)
		p.actors = append(p.actors, Actor{Name: "worker " + id, Run: w.Run})
	}
	if p.o.Reload != nil {
		p.actors = append(p.actors, Actor{Name: "rules", Run: func(ctx context.Context) error { return p.o.Reload(ctx, p.workers) }})
	}
	return nil
}

// AlertOptions are the alert stage of a pipeline.
type AlertOptions struct {
	// Durable names its consumer of the VERDICTS stream (default
	// <prefix>-alerts).
	Durable string
	// Notify delivers the verdicts to the subscriptions of the alerts
	// bucket, which is created when missing.
	Notify bool
	// DashboardURL prefixes the link to a run in notifications.
	DashboardURL string
}

func (o AlertOptions) durable(sub schema.Subjects) string {
	if o.Durable != "" {
		return o.Durable
	}
	return sub.Prefix + "-alerts"
}

func (p *Pipeline) addAlerts(ctx context.Context, o AlertOptions) error {
	nc, js, err := p.conn(transport.RoleAlert)
	if err != nil {
		return err
	}
	d := alert.New(nc, js, p.o.Subjects, o.durable(p.o.Subjects))
	if o.Notify {
		kv, err := alert.OpenStore(ctx, js, p.o.Subjects)
		if err != nil {
			return &UnavailableError{Err: err}
		}
		d.Notifier = alert.NewNotifier(nc, kv)
		d.Notifier.DashboardURL = o.DashboardURL
		d.Notifier.Subjects = p.o.Subjects
	}
	p.actors = append(p.actors, Actor{Name: "alerts", Run: d.Run})
	return nil
}

// SinkOptions are the sink of a pipeline: the VERDICTS and EVENTS streams
// into a store.
type SinkOptions struct {
	// Store is where the batches are written.
	Store sink.Appendable
	// Where says which store it is, for the announcement.
	Where string
	// Sink tunes the batches, retries and metrics.
	Sink sink.Options
	// Records, when set, reads the store: the sink then writes the record
	// entries of every run whose closing event it stores (package
	// query/record/stored), when Store can insert them (sink.Inserter).
	Records stored.Querier
}

func (p *Pipeline) addSink(_ context.Context, o SinkOptions) error {
	_, js, err := p.conn(transport.RoleSink)
	if err != nil {
		return err
	}
	if o.Sink.Logger == nil {
		o.Sink.Logger = p.o.Logger
	}
	if ins, ok := o.Store.(sink.Inserter); ok && o.Records != nil && o.Sink.Ended == nil {
		log := o.Sink.Logger
		w := &stored.Writer{Store: o.Records, Insert: sink.CountingInserter(ins, o.Sink.Metrics), Problems: func(run string, problems []string) {
			log.Warn("store: record entries: parts of the run's payloads could not be read", "run", run, "problems", problems)
		}}
		o.Sink.Ended = w.Ended
	}
	p.actors = append(p.actors, Actor{Name: "store", Run: func(ctx context.Context) error {
		fmt.Fprintf(p.o.Announce, "store     %s, from streams %s and %s in batches of up to %d rows\n", o.Where, schema.StreamVerdicts, schema.StreamEvents, o.Sink.BatchRows)
		err := sink.FromStreams(ctx, js, p.o.Subjects, o.Store, o.Sink)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}})
	return nil
}

// UnavailableError is a part that could not be made because a service it
// needs (NATS, JetStream, the store) did not answer or refused.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return e.Err.Error() }

func (e *UnavailableError) Unwrap() error { return e.Err }
