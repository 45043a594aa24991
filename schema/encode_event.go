package schema

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// eventWriter writes an event as encoding/json does, member by member in
// the order of the struct fields, without reflection. It handles the
// events as agents write them: strings that need no escaping, raw members
// whose compaction is dropping white space outside strings, timestamps
// RFC 3339 can hold. On anything else (a string or raw member with a
// character encoding/json escapes, a raw member that is empty) it stops,
// ok false, and the caller encodes the event with segmentio/encoding.
type eventWriter struct {
	dst []byte
	ok  bool
}

// appendEventWritten appends ev's EncodeEventLine line to dst and reports
// ok, or reports false (and dst, unchanged in length) when the event is
// one eventWriter leaves to the general encoder.
func appendEventWritten(dst []byte, ev *Event) ([]byte, bool) {
	w := eventWriter{dst: dst, ok: true}
	w.event(ev)
	if !w.ok {
		return dst, false
	}
	return append(w.dst, '\n'), true
}

func (w *eventWriter) event(ev *Event) {
	w.dst = append(w.dst, `{"v":`...)
	w.dst = strconv.AppendInt(w.dst, int64(ev.V), 10)
	w.str(`,"runId":`, ev.RunID)
	w.dst = append(w.dst, `,"seq":`...)
	w.dst = strconv.AppendUint(w.dst, ev.Seq, 10)
	w.time(`,"ts":`, ev.TS)
	w.str(`,"type":`, string(ev.Type))
	if s := ev.Start; s != nil {
		w.dst = append(w.dst, `,"start":{`...)
		first := true
		w.strOpt(&first, `"trace_id":`, s.TraceID)
		w.rawOpt(&first, `"trigger":`, s.Trigger)
		w.strsOpt(&first, `"high_stakes_paths":`, s.HighStakesPaths)
		w.strOpt(&first, `"agent":`, s.Agent)
		w.extraOpt(&first, s.Extra)
		w.dst = append(w.dst, '}')
	}
	if e := ev.End; e != nil {
		w.dst = append(w.dst, `,"end":{`...)
		first := true
		w.rawOpt(&first, `"outcome":`, e.Outcome)
		w.strOpt(&first, `"message":`, e.Message)
		if e.Implied {
			w.member(&first, `"implied":true`)
		}
		w.dst = append(w.dst, '}')
	}
	if ev.Action != nil {
		w.dst = append(w.dst, `,"action":`...)
		w.action(ev.Action)
	}
	if ev.Artifact != nil {
		w.dst = append(w.dst, `,"artifact":`...)
		w.artifact(ev.Artifact)
	}
	if ev.Residual != nil {
		w.dst = append(w.dst, `,"residual":`...)
		w.artifact(ev.Residual)
	}
	first := false
	w.rawOpt(&first, `"telemetry":`, ev.Telemetry)
	w.dst = append(w.dst, '}')
}

func (w *eventWriter) action(a *Action) {
	w.dst = append(w.dst, `{"id":`...)
	w.dst = strconv.AppendInt(w.dst, a.ID, 10)
	w.str(`,"type":`, a.Type)
	first := false
	w.strOpt(&first, `"category":`, a.Category)
	w.strOpt(&first, `"label":`, a.Label)
	w.strOpt(&first, `"rationale":`, a.Rationale)
	w.strOpt(&first, `"detail":`, a.Detail)
	w.strOpt(&first, `"result_summary":`, a.ResultSummary)
	w.strOpt(&first, `"status":`, a.Status)
	w.strsOpt(&first, `"inputs":`, a.Inputs)
	w.strsOpt(&first, `"outputs":`, a.Outputs)
	w.arrayOpt(`,"evidence":[`, len(a.Evidence), func(i int) {
		e := &a.Evidence[i]
		w.str(`{"type":`, e.Type)
		w.strOpt(&first, `"ref":`, e.Ref)
		w.extraOpt(&first, e.Extra)
		w.dst = append(w.dst, '}')
	})
	w.rawOpt(&first, `"request":`, a.Request)
	w.strOpt(&first, `"timestamp":`, a.Timestamp)
	w.strOpt(&first, `"capability":`, a.Capability)
	w.strOpt(&first, `"toolName":`, a.ToolName)
	w.strOpt(&first, `"connectorId":`, a.ConnectorID)
	w.strOpt(&first, `"actionType":`, a.ActionType)
	w.strOpt(&first, `"actionClass":`, a.ActionClass)
	w.strOpt(&first, `"reversibility":`, a.Reversibility)
	w.strOpt(&first, `"riskLevel":`, a.Risk)
	w.strOpt(&first, `"workerId":`, a.WorkerID)
	w.strOpt(&first, `"specialist":`, a.Specialist)
	w.strOpt(&first, `"taskId":`, a.TaskID)
	w.rawOpt(&first, `"payload":`, a.Payload)
	w.rawOpt(&first, `"constraints":`, a.Constraints)
	w.rawOpt(&first, `"requester":`, a.Requester)
	w.arrayOpt(`,"artifacts":[`, len(a.Artifacts), func(i int) { w.artifact(&a.Artifacts[i]) })
	w.extraOpt(&first, a.Extra)
	w.dst = append(w.dst, '}')
}

func (w *eventWriter) artifact(a *Artifact) {
	w.str(`{"artifact_id":`, a.ID)
	w.str(`,"artifact_type":`, a.Type)
	first := false
	w.strOpt(&first, `"name":`, a.Name)
	w.strsOpt(&first, `"derived_from":`, a.DerivedFrom)
	if a.ProducerActionID != nil {
		w.dst = append(w.dst, `,"producer_action_id":`...)
		w.dst = strconv.AppendInt(w.dst, *a.ProducerActionID, 10)
	}
	w.strsOpt(&first, `"supersedes":`, a.Supersedes)
	w.rawOpt(&first, `"payload":`, a.Payload)
	w.strOpt(&first, `"ref":`, a.Ref)
	w.strOpt(&first, `"created_at":`, a.CreatedAt)
	w.extraOpt(&first, a.Extra)
	w.dst = append(w.dst, '}')
}

// member appends an object member (key and value in text), after a comma
// unless it is the object's first; first says whether it is and is
// cleared.
func (w *eventWriter) member(first *bool, text string) {
	if !*first {
		w.dst = append(w.dst, ',')
	}
	*first = false
	w.dst = append(w.dst, text...)
}

// arrayOpt appends open (a member's key and "[") and the n elements
// element writes, unless n is 0 (omitempty).
func (w *eventWriter) arrayOpt(open string, n int, element func(i int)) {
	if n == 0 {
		return
	}
	w.dst = append(w.dst, open...)
	for i := range n {
		if i > 0 {
			w.dst = append(w.dst, ',')
		}
		element(i)
	}
	w.dst = append(w.dst, ']')
}

// str appends text and s as a JSON string.
func (w *eventWriter) str(text, s string) {
	w.dst = append(w.dst, text...)
	w.dst, w.ok = appendPlainString(w.dst, s, w.ok)
}

// strOpt appends the member key: s unless s is empty (omitempty).
func (w *eventWriter) strOpt(first *bool, key, s string) {
	if s != "" {
		w.member(first, key)
		w.dst, w.ok = appendPlainString(w.dst, s, w.ok)
	}
}

// strsOpt appends the member key: list unless list is empty.
func (w *eventWriter) strsOpt(first *bool, key string, list []string) {
	if len(list) == 0 {
		return
	}
	w.member(first, key)
	w.dst = append(w.dst, '[')
	for i, s := range list {
		if i > 0 {
			w.dst = append(w.dst, ',')
		}
		w.dst, w.ok = appendPlainString(w.dst, s, w.ok)
	}
	w.dst = append(w.dst, ']')
}

// rawOpt appends the member key: raw unless raw is empty.
func (w *eventWriter) rawOpt(first *bool, key string, raw json.RawMessage) {
	if len(raw) > 0 {
		w.member(first, key)
		w.raw(raw)
	}
}

// extraOpt appends the member "extra": m, its keys in order, unless m is
// empty.
func (w *eventWriter) extraOpt(first *bool, m map[string]json.RawMessage) {
	if len(m) == 0 {
		return
	}
	w.member(first, `"extra":{`)
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			w.dst = append(w.dst, ',')
		}
		w.dst, w.ok = appendPlainString(w.dst, k, w.ok)
		w.dst = append(w.dst, ':')
		if v := m[k]; v == nil {
			w.dst = append(w.dst, "null"...)
		} else {
			w.raw(v)
		}
	}
	w.dst = append(w.dst, '}')
}

// raw appends raw, one JSON value a decoder of this package kept, compacted
// as encoding/json compacts it: white space outside strings dropped. A
// value with a byte encoding/json would escape (<, >, & or the first byte
// of U+2028 and U+2029) or an empty value stops the writer.
func (w *eventWriter) raw(raw json.RawMessage) {
	if len(raw) == 0 {
		w.ok = false
		return
	}
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case c == '<' || c == '>' || c == '&' || c == 0xE2:
			w.ok = false
			return
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		case c == '"':
			inString = true
		}
		w.dst = append(w.dst, c)
	}
}

// time appends text and t as time.Time's MarshalJSON writes it, or stops
// the writer for a time MarshalJSON refuses (a year past 9999 or before 0,
// an offset of 24 hours or more) or one with an offset in seconds.
func (w *eventWriter) time(text string, t time.Time) {
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		w.ok = false
		return
	}
	w.dst = append(w.dst, text...)
	w.dst = append(w.dst, '"')
	w.dst = t.AppendFormat(w.dst, time.RFC3339Nano)
	w.dst = append(w.dst, '"')
}
