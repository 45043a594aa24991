package langfuse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
)

// Trace is a Langfuse trace with its observations, as the public API and
// the UI export it.
type Trace struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Timestamp    string          `json:"timestamp"`
	SessionID    string          `json:"sessionId"`
	UserID       string          `json:"userId"`
	Input        json.RawMessage `json:"input"`
	Output       json.RawMessage `json:"output"`
	Metadata     json.RawMessage `json:"metadata"`
	Tags         []string        `json:"tags"`
	Observations []Observation   `json:"observations"`
}

// Observation is one span, generation, event, tool call, … of a trace.
type Observation struct {
	ID                  string          `json:"id"`
	TraceID             string          `json:"traceId"`
	Type                string          `json:"type"`
	Name                string          `json:"name"`
	StartTime           string          `json:"startTime"`
	EndTime             string          `json:"endTime"`
	Input               json.RawMessage `json:"input"`
	Output              json.RawMessage `json:"output"`
	Metadata            json.RawMessage `json:"metadata"`
	Level               string          `json:"level"`
	StatusMessage       string          `json:"statusMessage"`
	ParentObservationID string          `json:"parentObservationId"`
	Model               string          `json:"model"`
}

// Decode reads an export: one trace object, a JSON array of traces, or an
// API page {"data": [...]}. An error names the file and what was expected.
func Decode(data []byte, name string) ([]Trace, error) {
	data = bytes.TrimSpace(data)
	var traces []Trace
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &traces); err != nil {
			return nil, fmt.Errorf("%s: expected a JSON array of Langfuse traces: %v", name, err)
		}
	default:
		var page struct {
			Data *[]Trace `json:"data"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return nil, fmt.Errorf("%s: expected a Langfuse trace export (a trace object, an array of them, or {\"data\": [...]}): %v", name, err)
		}
		if page.Data != nil {
			traces = *page.Data
			break
		}
		var t Trace
		if err := json.Unmarshal(data, &t); err != nil {
			return nil, fmt.Errorf("%s: expected a Langfuse trace object: %v", name, err)
		}
		traces = []Trace{t}
	}
	for i, t := range traces {
		if t.ID == "" {
			return nil, fmt.Errorf("%s: trace %d: id: expected the trace's id", name, i)
		}
	}
	return traces, nil
}

// Import turns each trace into the events of one run (runId the trace
// id): run.start, one action per TOOL observation in start-time order,
// one telemetry event per GENERATION, and run.finish (run.error when the
// trace's last observation is at level ERROR). Observations of other types
// are counted by type in the returned map and explained.
func Import(traces []Trace, t *mapping.Table, explain func(where, what string)) ([]schema.Event, map[string]int) {
	skipped := map[string]int{}
	say := func(where, format string, args ...any) {
		if explain != nil {
			explain(where, fmt.Sprintf(format, args...))
		}
	}
	var out []schema.Event
	for _, tr := range traces {
		sess := mapping.NewSession(t, tr.ID, "")
		start := &schema.RunStart{TraceID: tr.ID, Agent: tr.Name, Trigger: json.RawMessage(`{"type":"UserRequest"}`), Extra: map[string]json.RawMessage{}}
		for k, v := range map[string]string{"sessionId": tr.SessionID, "userId": tr.UserID} {
			if v != "" {
				start.Extra[k], _ = json.Marshal(v)
			}
		}
		if len(tr.Tags) > 0 {
			start.Extra["tags"], _ = json.Marshal(tr.Tags)
		}
		out = append(out, sess.Start(parseTime(tr.Timestamp), start))
		say("trace "+tr.ID, "run.start")
		obs := append([]Observation(nil), tr.Observations...)
		sort.SliceStable(obs, func(i, j int) bool { return parseTime(obs[i].StartTime).Before(parseTime(obs[j].StartTime)) })
		last := time.Time{}
		failed := false
		for _, o := range obs {
			where := fmt.Sprintf("trace %s observation %s", tr.ID, o.ID)
			if end := parseTime(o.EndTime); end.After(last) {
				last = end
			}
			switch o.Type {
			case "TOOL":
				c := toolCall(&o)
				for _, ev := range sess.Call(&c) {
					say(where, "%s %q: seq %d action %d %s (%s)", o.Type, o.Name, ev.Seq, ev.Action.ID, ev.Action.Type, ev.Action.Status)
					out = append(out, ev)
				}
				failed = o.Level == "ERROR"
			case "GENERATION":
				v, _ := json.Marshal(map[string]any{"kind": "generation", "name": o.Name, "model": o.Model, "observationId": o.ID, "level": o.Level})
				ev := sess.Telemetry(parseTime(o.StartTime), v)
				say(where, "GENERATION %q: seq %d telemetry", o.Name, ev.Seq)
				out = append(out, ev)
			default:
				skipped[kindOf(o.Type)]++
				say(where, "%s %q: skipped: not a tool call", kindOf(o.Type), o.Name)
			}
		}
		typ := schema.TypeRunFinish
		if failed {
			typ = schema.TypeRunError
		}
		out = append(out, sess.End(last, typ, ""))
		say("trace "+tr.ID, "%s", typ)
	}
	return out, skipped
}

func kindOf(t string) string {
	if t == "" {
		return "(no type)"
	}
	return t
}

// toolCall is the call a TOOL observation records: its input as the
// arguments (an object, or a JSON string holding one), failed at level
// ERROR.
func toolCall(o *Observation) mapping.Call {
	in := o.Input
	var s string
	if json.Unmarshal(in, &s) == nil && json.Valid([]byte(s)) {
		in = json.RawMessage(s)
	}
	c := mapping.Call{ID: o.ID, Tool: o.Name, Input: in, TS: parseTime(o.StartTime), Done: parseTime(o.EndTime)}
	switch {
	case o.Level == "ERROR":
		c.Status, c.Result = mapping.StatusFailed, o.StatusMessage
	case o.EndTime != "":
		c.Status = mapping.StatusCompleted
	}
	if c.Result == "" {
		if json.Unmarshal(o.Output, &s) == nil {
			c.Result = s
		} else if len(o.Output) > 0 && string(o.Output) != "null" {
			c.Result = string(o.Output)
		}
	}
	return c
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
