package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/schema"
)

// The codes of a worker's refusal to decide, and the errors Decide
// returns for them (errors.Is).
const (
	DecideRunEnded   = "run_ended"
	DecideRunUnknown = "run_unknown"
)

var (
	// ErrRunEnded: the run has ended (run.finish, run.error, run.cancel, or
	// idle): no step can follow it.
	ErrRunEnded = errors.New("the run has ended")
	// ErrRunUnknown: the worker has processed no event of the run, and the
	// request did not ask to judge it as a new run (NewRun).
	ErrRunUnknown = errors.New("the run is unknown")
)

// DecideOption changes what Decide asks.
type DecideOption func(*decideRequest)

// NewRun asks to judge a run the worker does not know as a new run, from
// an empty history. Without it such a run is refused with ErrRunUnknown.
func NewRun() DecideOption { return func(r *decideRequest) { r.NewRun = true } }

type decideRequest struct {
	RunID  string         `json:"runId"`
	Action *schema.Action `json:"action"`
	NewRun bool           `json:"newRun,omitempty"`
}

// Decide asks the worker that owns runID's partition whether the proposed
// step may run now (monitor.Run.Decide over NATS request/reply). While no
// worker can answer (no owner yet, a partition moving or rebuilding its
// runs after a takeover or a rule reload) it asks again, waiting a little
// longer each time, until ctx ends: a step is never allowed by default.
// A run that has ended is refused with ErrRunEnded, a run the worker does
// not know with ErrRunUnknown (unless NewRun is given).
func Decide(ctx context.Context, nc *nats.Conn, subjects schema.Subjects, runID string, step *schema.Action, opts ...DecideOption) (monitor.Decision, error) {
	req := decideRequest{RunID: runID, Action: step}
	for _, o := range opts {
		o(&req)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return monitor.Decision{}, err
	}
	wait := 20 * time.Millisecond
	var last error // why the last attempt could not be answered
	for {
		d, retry, err := decideOnce(ctx, nc, subjects, runID, body)
		if err != nil && last != nil && ctx.Err() != nil { // ctx ended during an attempt: say why none was answered
			return monitor.Decision{}, fmt.Errorf("%w (%v)", last, ctx.Err())
		}
		if !retry {
			return d, err
		}
		last = err
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
		Code  string `json:"code"`
		Retry bool   `json:"retry"`
	}
	if err := json.Unmarshal(msg.Data, &answer); err != nil {
		return d, false, fmt.Errorf("decide: the answer is not a decision: %w", err)
	}
	switch {
	case answer.Code == DecideRunEnded:
		return d, false, fmt.Errorf("decide: %s: %w", answer.Error, ErrRunEnded)
	case answer.Code == DecideRunUnknown:
		return d, false, fmt.Errorf("decide: %s: %w", answer.Error, ErrRunUnknown)
	case answer.Error != "":
		return d, answer.Retry, fmt.Errorf("decide: %s", answer.Error)
	}
	switch answer.Decision.Decision {
	case policymd.Allow, policymd.Deny, policymd.RequireApproval:
		return answer.Decision, false, nil
	}
	return d, false, fmt.Errorf("decide: the answer on %s for run %q is neither a decision (allow, deny or require_approval) nor an error: %.200q", subjects.Decide(k), runID, msg.Data)
}
