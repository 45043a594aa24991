package otlp

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
)

// The GenAI operations the converter reads (gen_ai.operation.name).
const (
	OpInvokeAgent = "invoke_agent"
	OpExecuteTool = "execute_tool"
)

// modelOps are the operations of model calls.
var modelOps = map[string]bool{"chat": true, "text_completion": true, "generate_content": true, "embeddings": true, "create_agent": false}

// What model calls become (Options.ModelCalls).
const (
	ModelCallsTelemetry = "telemetry"
	ModelCallsAction    = "action"
	ModelCallsSkip      = "skip"
)

// Options configures a Converter.
type Options struct {
	// ModelCalls is what a model call span becomes: telemetry (the
	// default), an action of tool "gen_ai.<operation>" through the mapping
	// table (the shipped table makes it a ModelCall), or nothing.
	ModelCalls string
}

// Rejection is a span the converter cannot evaluate, and why.
type Rejection struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
	Name    string `json:"name"`
	Reason  string `json:"reason"`
}

func (r Rejection) String() string {
	return fmt.Sprintf("span %s %q of trace %s: %s", r.SpanID, r.Name, r.TraceID, r.Reason)
}

// Result is what one batch of spans became.
type Result struct {
	Events   []schema.Event
	Rejected []Rejection
	// Skipped counts the spans that are not GenAI agent, tool or model
	// spans, by operation ("non-GenAI span" for spans without one).
	Skipped map[string]int
	// Duplicates counts the spans converted before (an exporter sending an
	// export again, for example after a failed store): their events are
	// the ones they became the first time, with the same run and seq, so
	// storing them again stores what was missing and nothing twice.
	Duplicates int
}

// Converter turns GenAI spans into the events of runs. It keeps each run
// open between batches, so spans of one run may come in several requests;
// a run ends when its root invoke_agent span ends. It is safe for
// concurrent use.
type Converter struct {
	table *mapping.Table
	opts  Options

	mu        sync.Mutex
	runs      map[string]*mapping.Session // open runs by key
	traceRuns map[string]string           // trace id → run key
	ended     map[string]bool             // run keys that ended
	endedFIFO []string
	seen      map[string]converted // the spans converted, by trace and span id
	seenFIFO  []string
}

// converted is what a span became: its events, or why it was rejected.
type converted struct {
	events    []schema.Event
	rejection string
}

// maxEnded bounds how many ended run keys a converter remembers, and
// maxSeen how many converted spans.
const (
	maxEnded = 4096
	maxSeen  = 1 << 14
)

// NewConverter returns a converter mapping tool calls through t.
func NewConverter(t *mapping.Table, opts Options) *Converter {
	if opts.ModelCalls == "" {
		opts.ModelCalls = ModelCallsTelemetry
	}
	return &Converter{table: t, opts: opts, runs: map[string]*mapping.Session{}, traceRuns: map[string]string{}, ended: map[string]bool{}, seen: map[string]converted{}}
}

// span is a span with what the converter reads of it.
type span struct {
	s        ptrace.Span
	resource pcommon.Map
	op       string
	traceID  string
	spanID   string
	parentID string
}

// Convert turns one batch into events, in the order the spans ended.
// explain, when set, receives one sentence per span.
func (c *Converter) Convert(td ptrace.Traces, explain func(where, what string)) Result {
	res := Result{Skipped: map[string]int{}}
	spans := collect(td)
	byID := make(map[string]*span, len(spans))
	for _, sp := range spans {
		byID[sp.spanID] = sp
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].s.EndTimestamp() < spans[j].s.EndTimestamp() })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sp := range spans {
		where := fmt.Sprintf("trace %s span %s %q", sp.traceID, sp.spanID, sp.s.Name())
		say := func(format string, args ...any) {
			if explain != nil {
				explain(where, fmt.Sprintf(format, args...))
			}
		}
		switch {
		case sp.op == OpInvokeAgent, sp.op == OpExecuteTool, modelOps[sp.op]:
		default:
			op := sp.op
			if op == "" {
				op = "non-GenAI span"
			}
			res.Skipped[op]++
			say("skipped: not a GenAI agent, tool or model span")
			continue
		}
		id := sp.traceID + "/" + sp.spanID
		if was, ok := c.seen[id]; ok {
			res.Duplicates++
			if was.rejection != "" {
				res.reject(sp, was.rejection)
				say("duplicate: rejected before (an export sent again): %s", was.rejection)
				continue
			}
			res.Events = append(res.Events, was.events...)
			say("duplicate: converted before (an export sent again): its %d event(s) again", len(was.events))
			continue
		}
		first := len(res.Events)
		key := c.runKey(sp, byID)
		if c.ended[key] {
			res.reject(sp, fmt.Sprintf("run %s has ended (its root invoke_agent span ended)", key))
			say("rejected: run %s has ended", key)
			continue
		}
		sess := c.session(key, sp, byID, &res, say)
		switch {
		case sp.op == OpExecuteTool:
			call, reason := toolCall(sp)
			if reason != "" {
				c.markSeen(id, converted{rejection: reason})
				res.reject(sp, reason)
				say("rejected: %s", reason)
				continue
			}
			for _, ev := range sess.Call(&call) {
				say("seq %d action %d %s (%s) of run %s", ev.Seq, ev.Action.ID, ev.Action.Type, ev.Action.Status, key)
				res.Events = append(res.Events, ev)
			}
		case modelOps[sp.op]:
			res.Events = append(res.Events, c.modelCall(sess, sp, say)...)
		case sp.op == OpInvokeAgent && isRoot(sp, byID):
			typ, msg := schema.TypeRunFinish, ""
			if sp.s.Status().Code() == ptrace.StatusCodeError {
				typ, msg = schema.TypeRunError, sp.s.Status().Message()
			}
			ev := sess.End(sp.s.EndTimestamp().AsTime(), typ, msg)
			say("seq %d %s: the root agent span ended run %s", ev.Seq, typ, key)
			res.Events = append(res.Events, ev)
			c.end(key)
		default:
			say("a nested agent span of run %s: nothing to record", key)
		}
		c.markSeen(id, converted{events: slices.Clone(res.Events[first:])})
	}
	return res
}

// markSeen remembers what a span became, forgetting the oldest beyond
// maxSeen.
func (c *Converter) markSeen(id string, was converted) {
	c.seen[id] = was
	c.seenFIFO = append(c.seenFIFO, id)
	if len(c.seenFIFO) > maxSeen {
		delete(c.seen, c.seenFIFO[0])
		c.seenFIFO = c.seenFIFO[1:]
	}
}

func (r *Result) reject(sp *span, reason string) {
	r.Rejected = append(r.Rejected, Rejection{TraceID: sp.traceID, SpanID: sp.spanID, Name: sp.s.Name(), Reason: reason})
}

func collect(td ptrace.Traces) []*span {
	var out []*span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				s := ss.At(k)
				sp := &span{s: s, resource: rs.Resource().Attributes(), traceID: s.TraceID().String(), spanID: s.SpanID().String()}
				if !s.ParentSpanID().IsEmpty() {
					sp.parentID = s.ParentSpanID().String()
				}
				sp.op = operation(s)
				out = append(out, sp)
			}
		}
	}
	return out
}

// operation is gen_ai.operation.name, else the span name's first word
// when it names a GenAI operation ("execute_tool get_weather").
func operation(s ptrace.Span) string {
	if v, ok := s.Attributes().Get("gen_ai.operation.name"); ok {
		return v.AsString()
	}
	first, _, _ := strings.Cut(s.Name(), " ")
	if _, ok := modelOps[first]; ok || first == OpInvokeAgent || first == OpExecuteTool {
		return first
	}
	return ""
}

// runKey is the run a span belongs to: the run its trace is already in,
// else gen_ai.conversation.id of the span or of an ancestor in the batch,
// else the trace id.
func (c *Converter) runKey(sp *span, byID map[string]*span) string {
	if k, ok := c.traceRuns[sp.traceID]; ok {
		return k
	}
	key := sp.traceID
	for a := sp; a != nil; a = byID[a.parentID] {
		if v, ok := a.s.Attributes().Get("gen_ai.conversation.id"); ok && v.AsString() != "" {
			key = v.AsString()
			break
		}
		if a.parentID == "" {
			break
		}
	}
	c.traceRuns[sp.traceID] = key
	return key
}

// session is the open run key, started (run.start) when new.
func (c *Converter) session(key string, sp *span, byID map[string]*span, res *Result, say func(string, ...any)) *mapping.Session {
	if s, ok := c.runs[key]; ok {
		return s
	}
	s := mapping.NewSession(c.table, key, "")
	agentSpan := sp
	for a := sp; a != nil; a = byID[a.parentID] {
		if a.op == OpInvokeAgent {
			agentSpan = a
		}
		if a.parentID == "" {
			break
		}
	}
	start := &schema.RunStart{TraceID: sp.traceID, Agent: agentName(agentSpan), Trigger: json.RawMessage(`{"type":"UserRequest"}`), Extra: map[string]json.RawMessage{}}
	if p := provider(agentSpan.s.Attributes()); p != "" {
		start.Extra["provider"], _ = json.Marshal(p)
	}
	ev := s.Start(agentSpan.s.StartTimestamp().AsTime(), start)
	say("seq %d run.start of run %s (agent %q)", ev.Seq, key, start.Agent)
	res.Events = append(res.Events, ev)
	c.runs[key] = s
	return s
}

func (c *Converter) end(key string) {
	delete(c.runs, key)
	for t, k := range c.traceRuns {
		if k == key {
			delete(c.traceRuns, t)
		}
	}
	c.ended[key] = true
	c.endedFIFO = append(c.endedFIFO, key)
	if len(c.endedFIFO) > maxEnded {
		delete(c.ended, c.endedFIFO[0])
		c.endedFIFO = c.endedFIFO[1:]
	}
}

// isRoot reports whether an invoke_agent span is its run's root: it has
// no parent, or no invoke_agent span among its ancestors in the batch.
func isRoot(sp *span, byID map[string]*span) bool {
	for a := byID[sp.parentID]; a != nil; a = byID[a.parentID] {
		if a.op == OpInvokeAgent {
			return false
		}
		if a.parentID == "" {
			break
		}
	}
	return true
}

func agentName(sp *span) string {
	for _, k := range []string{"gen_ai.agent.name", "gen_ai.agent.id"} {
		if v, ok := sp.s.Attributes().Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	if v, ok := sp.resource.Get("service.name"); ok {
		return v.AsString()
	}
	return ""
}

// provider reads gen_ai.provider.name, or gen_ai.system of the
// conventions before 1.37.
func provider(attrs pcommon.Map) string {
	for _, k := range []string{"gen_ai.provider.name", "gen_ai.system"} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}

// toolCall is the call an execute_tool span records, or why it cannot be
// evaluated.
func toolCall(sp *span) (mapping.Call, string) {
	attrs := sp.s.Attributes()
	name := ""
	if v, ok := attrs.Get("gen_ai.tool.name"); ok {
		name = v.AsString()
	} else if _, rest, ok := strings.Cut(sp.s.Name(), " "); ok {
		name = strings.TrimSpace(rest)
	}
	if name == "" {
		return mapping.Call{}, "execute_tool span without gen_ai.tool.name: the tool is unknown"
	}
	c := mapping.Call{Tool: name, TS: sp.s.StartTimestamp().AsTime(), Done: sp.s.EndTimestamp().AsTime(), Status: mapping.StatusCompleted}
	if v, ok := attrs.Get("gen_ai.tool.call.id"); ok {
		c.ID = v.AsString()
	}
	if v, ok := attrs.Get("gen_ai.tool.call.arguments"); ok {
		c.Input = structured(v, "arguments")
	}
	if v, ok := attrs.Get("gen_ai.tool.call.result"); ok {
		c.Result = v.AsString()
	}
	if sp.s.Status().Code() == ptrace.StatusCodeError {
		c.Status = mapping.StatusFailed
		if c.Result == "" {
			c.Result = sp.s.Status().Message()
		}
	}
	return c, ""
}

// structured is an attribute that is a JSON object, structured or as a
// string; anything else is kept as {key: value}.
func structured(v pcommon.Value, key string) json.RawMessage {
	if v.Type() == pcommon.ValueTypeMap {
		b, _ := json.Marshal(v.Map().AsRaw())
		return b
	}
	s := v.AsString()
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) == nil {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(map[string]any{key: v.AsRaw()})
	return b
}

func (c *Converter) modelCall(sess *mapping.Session, sp *span, say func(string, ...any)) []schema.Event {
	attrs := sp.s.Attributes()
	info := map[string]any{"kind": "model_call", "operation": sp.op, "spanId": sp.spanID}
	if p := provider(attrs); p != "" {
		info["provider"] = p
	}
	for k, name := range map[string]string{"gen_ai.request.model": "model", "gen_ai.usage.input_tokens": "inputTokens", "gen_ai.usage.output_tokens": "outputTokens"} {
		if v, ok := attrs.Get(k); ok {
			info[name] = v.AsRaw()
		}
	}
	switch c.opts.ModelCalls {
	case ModelCallsSkip:
		say("model call: skipped (model calls are not recorded)")
		return nil
	case ModelCallsAction:
		in, _ := json.Marshal(info)
		call := mapping.Call{ID: sp.spanID, Tool: "gen_ai." + sp.op, Input: in, TS: sp.s.StartTimestamp().AsTime(), Done: sp.s.EndTimestamp().AsTime(), Status: mapping.StatusCompleted}
		if sp.s.Status().Code() == ptrace.StatusCodeError {
			call.Status = mapping.StatusFailed
		}
		evs := sess.Call(&call)
		for _, ev := range evs {
			say("seq %d action %d %s (model call)", ev.Seq, ev.Action.ID, ev.Action.Type)
		}
		return evs
	}
	v, _ := json.Marshal(info)
	ev := sess.Telemetry(sp.s.EndTimestamp().AsTime(), v)
	say("seq %d telemetry (model call)", ev.Seq)
	return []schema.Event{ev}
}

// Pending lists the runs open in the converter.
func (c *Converter) Pending() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.runs))
	for k := range c.runs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
