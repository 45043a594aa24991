package api

import (
	"context"

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
func (l NATSLive) Follow(ctx context.Context, fn func(LiveVerdict)) error {
	sub, err := l.Conn.Subscribe(l.Subjects.VerdictsIn(), func(m *nats.Msg) {
		fn(LiveVerdict{Data: m.Data, Agent: m.Header.Get(schema.HeaderAgent), Project: m.Header.Get(schema.HeaderProject), Severity: m.Header.Get(schema.HeaderSeverity)})
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	<-ctx.Done()
	return nil
}

// FollowAlerts subscribes to the alerts of the stream subscription id
// (alert.StreamSubject) until ctx ends.
func (l NATSLive) FollowAlerts(ctx context.Context, id string, fn func([]byte)) error {
	sub, err := l.Conn.Subscribe(alert.StreamSubject(l.Subjects, id), func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	<-ctx.Done()
	return nil
}
