package api

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
)

// NATSLive follows the verdicts published on the verdict subjects of
// Subjects, on Conn: what the workers publish, as they publish it (a core
// NATS subscription beside the VERDICTS stream, so nothing is stored for
// a client that is not there).
type NATSLive struct {
	Conn     *nats.Conn
	Subjects schema.Subjects
}

// Follow subscribes until ctx ends.
func (l NATSLive) Follow(ctx context.Context, fn func(LiveVerdict), ready func()) error {
	return l.follow(ctx, l.Subjects.VerdictsIn(), func(m *nats.Msg) {
		fn(LiveVerdict{Data: m.Data, Agent: m.Header.Get(schema.HeaderAgent), Project: m.Header.Get(schema.HeaderProject), Severity: m.Header.Get(schema.HeaderSeverity)})
	}, ready)
}

// follow subscribes to subject, calls ready once the server has the
// subscription, and unsubscribes when ctx ends.
func (l NATSLive) follow(ctx context.Context, subject string, fn nats.MsgHandler, ready func()) error {
	sub, err := l.Conn.Subscribe(subject, fn)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := l.Conn.FlushTimeout(5 * time.Second); err != nil {
		return err
	}
	ready()
	<-ctx.Done()
	return nil
}

// FollowAlerts subscribes to the alerts of the stream subscription id
// (alert.StreamSubject) until ctx ends.
func (l NATSLive) FollowAlerts(ctx context.Context, id string, fn func([]byte), ready func()) error {
	return l.follow(ctx, alert.StreamSubject(l.Subjects, id), func(m *nats.Msg) { fn(m.Data) }, ready)
}
