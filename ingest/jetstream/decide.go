package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/schema"
)

// Decide asks the worker that owns runID's partition whether the proposed
// step may run now (monitor.Run.Decide over NATS request/reply). While no
// worker can answer (no owner yet, a partition moving or rebuilding its
// runs after a takeover or a rule reload) it asks again, waiting a little
// longer each time, until ctx ends: a step is never allowed by default.
func Decide(ctx context.Context, nc *nats.Conn, subjects schema.Subjects, runID string, step *schema.Action) (monitor.Decision, error) {
	body, err := json.Marshal(map[string]any{"runId": runID, "action": step})
	if err != nil {
		return monitor.Decision{}, err
	}
	wait := 20 * time.Millisecond
	for {
		d, retry, err := decideOnce(ctx, nc, subjects, runID, body)
		if !retry {
			return d, err
		}
		select {
		case <-ctx.Done():
			return monitor.Decision{}, fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// decideOnce asks once; retry says whether asking again may succeed.
func decideOnce(ctx context.Context, nc *nats.Conn, subjects schema.Subjects, runID string, body []byte) (d monitor.Decision, retry bool, err error) {
	k := subjects.PartitionOf(runID)
	msg, err := nc.RequestWithContext(ctx, subjects.Decide(k), body)
	if errors.Is(err, nats.ErrNoResponders) {
		return d, true, fmt.Errorf("decide: no worker answers on %s for run %q: no worker owns partition %d yet, or the stream has fewer than the client's %d partitions",
			subjects.Decide(k), runID, k, subjects.Partitions)
	}
	if err != nil {
		return d, false, fmt.Errorf("decide: %w", err)
	}
	var answer struct {
		monitor.Decision
		Error string `json:"error"`
		Retry bool   `json:"retry"`
	}
	if err := json.Unmarshal(msg.Data, &answer); err != nil {
		return d, false, fmt.Errorf("decide: the answer is not a decision: %w", err)
	}
	if answer.Error != "" {
		return d, answer.Retry, fmt.Errorf("decide: %s", answer.Error)
	}
	return answer.Decision, false, nil
}
