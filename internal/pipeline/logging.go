package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/schema"
)

// LoggedDeadLetters stores each dead letter with its sink and logs it at
// warn level: reason, run, source and error, one line each.
type LoggedDeadLetters struct {
	Sink gateway.DeadLetterSink
	Log  *slog.Logger
}

// Send logs the dead letter, then stores it.
func (l LoggedDeadLetters) Send(ctx context.Context, reason, source string, err error, payload []byte) error {
	l.Log.Warn("dead letter", "reason", reason, "run", runOf(payload), "source", source, "error", err)
	return l.Sink.Send(ctx, reason, source, err, payload)
}

// runOf is the runId of an event payload, or "" when it has none or does
// not decode.
func runOf(payload []byte) string {
	var ev struct {
		RunID string `json:"runId"`
	}
	_ = json.Unmarshal(payload, &ev)
	return ev.RunID
}

// LogViolation logs a violated verdict at info level: rule, run, agent, seq.
func LogViolation(log *slog.Logger) func(v *schema.VerdictEvent, agent string) {
	return func(v *schema.VerdictEvent, agent string) {
		log.Info("violation", "rule", v.Rule.ID, "run", v.RunID, "agent", agent, "seq", v.Seq, "mode", v.Mode)
	}
}
