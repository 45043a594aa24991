package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/schema"
)

// Decide asks the worker that owns runID's partition whether the proposed
// step may run now (monitor.Run.Decide over NATS request/reply). It fails
// when no worker answers before ctx ends, or when the worker cannot answer
// (for instance while the partition moves: ask again).
func Decide(ctx context.Context, nc *nats.Conn, subjects schema.Subjects, runID string, step *schema.Action) (monitor.Decision, error) {
	body, err := json.Marshal(map[string]any{"runId": runID, "action": step})
	if err != nil {
		return monitor.Decision{}, err
	}
	msg, err := nc.RequestWithContext(ctx, subjects.Decide(subjects.PartitionOf(runID)), body)
	if errors.Is(err, nats.ErrNoResponders) {
		return monitor.Decision{}, fmt.Errorf("decide: no worker owns the partition of run %q yet", runID)
	}
	if err != nil {
		return monitor.Decision{}, fmt.Errorf("decide: %w", err)
	}
	var answer struct {
		monitor.Decision
		Error string `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &answer); err != nil {
		return monitor.Decision{}, fmt.Errorf("decide: the answer is not a decision: %w", err)
	}
	if answer.Error != "" {
		return monitor.Decision{}, fmt.Errorf("decide: %s", answer.Error)
	}
	return answer.Decision, nil
}
