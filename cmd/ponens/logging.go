package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/schema"
)

// loggedDeadLetters stores each dead letter with its sink and logs it at
// warn level: reason, run, source and error, one line each.
type loggedDeadLetters struct {
	sink gateway.DeadLetterSink
	log  *slog.Logger
}

// Send logs the dead letter, then stores it.
func (l loggedDeadLetters) Send(ctx context.Context, reason, source string, err error, payload []byte) error {
	l.log.Warn("dead letter", "reason", reason, "run", runOf(payload), "source", source, "error", err)
	return l.sink.Send(ctx, reason, source, err, payload)
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

// logViolation logs a violated verdict at info level: rule, run, agent, seq.
func logViolation(log *slog.Logger) func(v *schema.VerdictEvent, agent string) {
	return func(v *schema.VerdictEvent, agent string) {
		log.Info("violation", "rule", v.Rule.ID, "run", v.RunID, "agent", agent, "seq", v.Seq, "mode", v.Mode)
	}
}
