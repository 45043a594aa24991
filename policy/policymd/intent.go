package policymd

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/ponens/ponens/schema"
)

// Intent is the ActionIntent of seed 004 §5: what a tool call is about to do,
// as rule conditions see it. JSON names are those of the TypeScript
// interface. Payload, Constraints and Requester hold JSON-like values (as
// decoded by encoding/json into any); other Go scalars, slices and string-keyed
// maps are accepted too and compared as their JSON counterparts.
type Intent struct {
	ID              string         `json:"id"`
	WorkRunID       string         `json:"workRunId"`
	TaskID          string         `json:"taskId,omitempty"`
	WorkerSessionID string         `json:"workerSessionId,omitempty"`
	WorkerID        string         `json:"workerId"`
	Specialist      string         `json:"specialist"`
	ActionType      string         `json:"actionType"`
	Capability      string         `json:"capability"`
	ToolName        string         `json:"toolName,omitempty"`
	ConnectorID     string         `json:"connectorId,omitempty"`
	ActionClass     string         `json:"actionClass,omitempty"`
	Reversibility   string         `json:"reversibility,omitempty"`
	RiskLevel       string         `json:"riskLevel"`
	Payload         map[string]any `json:"payload"`
	Constraints     map[string]any `json:"constraints,omitempty"`
	Requester       map[string]any `json:"requester"`
	// CreatedAt is milliseconds since the Unix epoch.
	CreatedAt int64 `json:"createdAt"`
}

// Resolve returns the value at a dotted path of the intent and whether it is
// defined (seed 004 §2 "Resolvable paths"). The first segment names a
// top-level field (risk and riskLevel are the same field); payload,
// constraints and requester continue into nested objects, and a decimal
// segment indexes an array ("payload.files.0"). A string field that is empty
// and a CreatedAt of 0 are undefined, as is any path that leads nowhere.
// Numbers resolve as float64.
func (in *Intent) Resolve(path string) (any, bool) {
	head, rest, more := strings.Cut(path, ".")
	switch head {
	case "payload", "constraints", "requester":
		var m map[string]any
		switch head {
		case "payload":
			m = in.Payload
		case "constraints":
			m = in.Constraints
		default:
			m = in.Requester
		}
		if m == nil {
			return nil, false
		}
		if !more {
			return m, true
		}
		return walk(m, rest)
	case "createdAt":
		if more || in.CreatedAt == 0 {
			return nil, false
		}
		return float64(in.CreatedAt), true
	}
	s, ok := in.stringField(head)
	if !ok || more || s == "" {
		return nil, false
	}
	return s, true
}

// stringField returns the top-level string field called name.
func (in *Intent) stringField(name string) (string, bool) {
	switch name {
	case "id":
		return in.ID, true
	case "workRunId":
		return in.WorkRunID, true
	case "taskId":
		return in.TaskID, true
	case "workerSessionId":
		return in.WorkerSessionID, true
	case "workerId":
		return in.WorkerID, true
	case "specialist":
		return in.Specialist, true
	case "actionType":
		return in.ActionType, true
	case "capability":
		return in.Capability, true
	case "toolName":
		return in.ToolName, true
	case "connectorId":
		return in.ConnectorID, true
	case "actionClass":
		return in.ActionClass, true
	case "reversibility":
		return in.Reversibility, true
	case "risk", "riskLevel":
		return in.RiskLevel, true
	}
	return "", false
}

// walk follows a dotted path through nested objects and arrays.
func walk(v any, path string) (any, bool) {
	for {
		seg, rest, more := strings.Cut(path, ".")
		switch c := normalizeShallow(v).(type) {
		case map[string]any:
			next, ok := c[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, ok := arrayIndex(seg)
			if !ok || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
		if !more {
			return normalizeShallow(v), true
		}
		path = rest
	}
}

// arrayIndex parses a decimal array index without sign or leading zeros.
func arrayIndex(s string) (int, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}

// IntentFromAction builds the Intent of a tool-call action of run runID from
// its ActionIntent fields (schema.Action). ID is the action id in decimal,
// WorkRunID is runID, RiskLevel is the action's riskLevel, and CreatedAt is
// the action's RFC 3339 timestamp in milliseconds (0 when absent or
// unparsable). Payload, Constraints and Requester are decoded from their JSON;
// a value that is not a JSON object leaves the field nil.
func IntentFromAction(runID string, a *schema.Action) Intent {
	in := Intent{
		ID:            strconv.FormatInt(a.ID, 10),
		WorkRunID:     runID,
		TaskID:        a.TaskID,
		WorkerID:      a.WorkerID,
		Specialist:    a.Specialist,
		ActionType:    a.ActionType,
		Capability:    a.Capability,
		ToolName:      a.ToolName,
		ConnectorID:   a.ConnectorID,
		ActionClass:   a.ActionClass,
		Reversibility: a.Reversibility,
		RiskLevel:     a.Risk,
		Payload:       jsonObject(a.Payload),
		Constraints:   jsonObject(a.Constraints),
		Requester:     jsonObject(a.Requester),
	}
	if a.Timestamp != "" {
		if t, err := time.Parse(time.RFC3339Nano, a.Timestamp); err == nil {
			in.CreatedAt = t.UnixMilli()
		}
	}
	return in
}

// jsonObject decodes raw as a JSON object, or returns nil.
func jsonObject(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	return m
}

// ActionFromIntent is the inverse of IntentFromAction: the tool-call action
// (of type ToolCall, with id) that an ActionIntent proposes.
func ActionFromIntent(in *Intent, id int64) schema.Action {
	raw := func(m map[string]any) json.RawMessage {
		if m == nil {
			return nil
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil
		}
		return b
	}
	a := schema.Action{
		ID: id, Type: "ToolCall", Category: "activity",
		Capability: in.Capability, ToolName: in.ToolName, ConnectorID: in.ConnectorID,
		ActionType: in.ActionType, ActionClass: in.ActionClass, Reversibility: in.Reversibility,
		Risk: in.RiskLevel, WorkerID: in.WorkerID, Specialist: in.Specialist, TaskID: in.TaskID,
		Payload: raw(in.Payload), Constraints: raw(in.Constraints), Requester: raw(in.Requester),
	}
	if in.CreatedAt != 0 {
		a.Timestamp = time.UnixMilli(in.CreatedAt).UTC().Format(time.RFC3339Nano)
	}
	return a
}
