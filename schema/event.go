package schema

import (
	"encoding/json"
	"time"
)

// EnvelopeVersion is the only value of Event.V this build understands.
const EnvelopeVersion = 1

// EventType names what an event reports. The set is closed: an event of any
// other type is invalid and goes to the dead-letter path.
type EventType string

// The event types. Lifecycle events open and close a run; actions are the
// temporal positions policies range over; artifacts, residuals and telemetry
// update the context that the next position sees.
const (
	TypeRunStart  EventType = "run.start"
	TypeRunFinish EventType = "run.finish"
	TypeRunError  EventType = "run.error"
	TypeRunCancel EventType = "run.cancel"
	TypeAction    EventType = "action"
	TypeArtifact  EventType = "artifact"
	TypeResidual  EventType = "residual"
	TypeTelemetry EventType = "telemetry"
)

// IsTerminal reports whether t closes a run.
func (t EventType) IsTerminal() bool {
	return t == TypeRunFinish || t == TypeRunError || t == TypeRunCancel
}

// Event is the wire envelope of one trace event (DESIGN.md §3). Exactly one
// body field is set, the one that goes with Type: Start for run.start, End for
// run.finish / run.error / run.cancel, Action, Artifact, Residual (an artifact
// of type Residual) or Telemetry.
type Event struct {
	V     int       `json:"v"`
	RunID string    `json:"runId"`
	Seq   uint64    `json:"seq"`
	TS    time.Time `json:"ts"`
	Type  EventType `json:"type"`

	Start     *RunStart       `json:"start,omitempty"`
	End       *RunEnd         `json:"end,omitempty"`
	Action    *Action         `json:"action,omitempty"`
	Artifact  *Artifact       `json:"artifact,omitempty"`
	Residual  *Artifact       `json:"residual,omitempty"`
	Telemetry json.RawMessage `json:"telemetry,omitempty"`
}

// RunStart is the body of run.start: the trigger and the trace-level facts of
// the run. Extra keeps every field of a reference trace's top level that has
// no field here, so that a converted trace loses nothing.
type RunStart struct {
	TraceID         string                     `json:"trace_id,omitempty"`
	Trigger         json.RawMessage            `json:"trigger,omitempty"`
	HighStakesPaths []string                   `json:"high_stakes_paths,omitempty"`
	Agent           string                     `json:"agent,omitempty"`
	Extra           map[string]json.RawMessage `json:"extra,omitempty"`
}

// RunEnd is the body of run.finish, run.error and run.cancel: the outcome of
// the run as the reference trace states it ({"type": "ProcessCompleted"}, …),
// and a message for errors.
type RunEnd struct {
	Outcome json.RawMessage `json:"outcome,omitempty"`
	Message string          `json:"message,omitempty"`
	// Implied marks the run.finish that ends a reference trace without an
	// outcome: a trace file is a finished record, so it ends as completed.
	Implied bool `json:"implied,omitempty"`
}

// Action is one agent step: a temporal position. Field names follow the
// reference trace format (snake_case) so that trace files convert without
// loss; Extra keeps any field this struct does not name. Tool calls also carry
// the ActionIntent fields POLICY.md conditions read (seed 004 §5).
type Action struct {
	ID            int64           `json:"id"`
	Type          string          `json:"type"`
	Category      string          `json:"category,omitempty"`
	Label         string          `json:"label,omitempty"`
	Rationale     string          `json:"rationale,omitempty"`
	Detail        string          `json:"detail,omitempty"`
	ResultSummary string          `json:"result_summary,omitempty"`
	Status        string          `json:"status,omitempty"` // completed | failed | "" (unknown)
	Inputs        []string        `json:"inputs,omitempty"`
	Outputs       []string        `json:"outputs,omitempty"`
	Evidence      []Evidence      `json:"evidence,omitempty"`
	Request       json.RawMessage `json:"request,omitempty"`
	Timestamp     string          `json:"timestamp,omitempty"`

	// ActionIntent fields (seed 004 §5), present on tool calls.
	Capability    string          `json:"capability,omitempty"`
	ToolName      string          `json:"toolName,omitempty"`
	ConnectorID   string          `json:"connectorId,omitempty"`
	ActionType    string          `json:"actionType,omitempty"`
	ActionClass   string          `json:"actionClass,omitempty"`
	Reversibility string          `json:"reversibility,omitempty"`
	Risk          string          `json:"riskLevel,omitempty"`
	WorkerID      string          `json:"workerId,omitempty"`
	Specialist    string          `json:"specialist,omitempty"`
	TaskID        string          `json:"taskId,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	Constraints   json.RawMessage `json:"constraints,omitempty"`
	Requester     json.RawMessage `json:"requester,omitempty"`

	// Artifacts produced by this action, carried inline. They are attached to
	// the action exactly like artifact events that follow it.
	Artifacts []Artifact `json:"artifacts,omitempty"`

	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// Evidence is one entry of an action's evidence list, e.g.
// {"type": "FileRef", "ref": "src/a.py"}.
type Evidence struct {
	Type  string                     `json:"type"`
	Ref   string                     `json:"ref,omitempty"`
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// Artifact is one node of the typed artifact graph (SEMANTICS.md §1).
// Supersedes is an id or a list of ids in the reference format; it is
// normalised to a list here.
type Artifact struct {
	ID               string                     `json:"artifact_id"`
	Type             string                     `json:"artifact_type"`
	Name             string                     `json:"name,omitempty"`
	DerivedFrom      []string                   `json:"derived_from,omitempty"`
	ProducerActionID *int64                     `json:"producer_action_id,omitempty"`
	Supersedes       []string                   `json:"supersedes,omitempty"`
	Payload          json.RawMessage            `json:"payload,omitempty"`
	Ref              string                     `json:"ref,omitempty"`
	CreatedAt        string                     `json:"created_at,omitempty"`
	Extra            map[string]json.RawMessage `json:"extra,omitempty"`
}

// StartProject is the project a run's start names: the string in its extra
// field "project" (a reference trace's top-level "project"), or "" when
// there is none or it is not a string. The store reads the same field for
// a run's project.
func StartProject(s *RunStart) string {
	raw, ok := s.Extra["project"]
	if !ok {
		return ""
	}
	var p string
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	return p
}
