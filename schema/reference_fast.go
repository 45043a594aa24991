package schema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
)

// refFast converts a reference trace in one pass over its bytes (refScan),
// without reflection or intermediate maps, for a trace that the general
// conversion (refDecoder.decode) reads with no problem and no warning.
// Whatever that conversion would report or read leniently (a malformed
// document, a value of another type, a repeated key, …) makes it give up,
// and DecodeReferenceWarn converts with refDecoder.decode instead, which
// places each problem on a line and column. On what it accepts, both give
// the same events (FuzzDecodeReferenceFast compares them).
type refFast struct {
	s       refScan
	strs    map[string]string // short strings already made, to share them
	arena   []byte            // raw values are copied here
	actions []refAction       // the current slab of actions
	// index, when set, receives the actions' index (indexActions)
	// instead of their decoding.
	index *actionIndex
}

// maxShared is the longest string refFast shares between values, and
// maxSharedCount how many distinct ones it keeps.
const (
	maxShared      = 48
	maxSharedCount = 4096
)

// DecodeReferenceFast converts the reference trace data with the reader
// written for clean traces; ok is false when it gives up, on anything the
// general reader (DecodeReferenceGeneral) would report or read with a
// warning. When ok, the events are those DecodeReferenceWarn returns.
func DecodeReferenceFast(data []byte) (events []Event, ok bool) {
	f := refFast{s: refScan{data: data}, strs: make(map[string]string)}
	start, actions, artifacts, tail := f.trace()
	if f.s.bad {
		return nil, false
	}
	finishActions(actions, artifacts)
	d := refDecoder{data: data}
	events = d.assemble(start, actions, artifacts, tail)
	return events, len(d.problems) == 0
}

// str returns the value of the string literal data[start:end].
func (f *refFast) str(start, end int, plain bool) string {
	if f.s.bad {
		return ""
	}
	if !plain {
		return stringValue(f.s.data[start:end], false)
	}
	return f.shared(f.s.data[start+1 : end-1])
}

// shared returns string(b), made once for a short string that repeats.
func (f *refFast) shared(b []byte) string { return shareString(f.strs, b) }

// shareString returns string(b), taken from strs when a string of up to
// maxShared bytes was made before and added to it (while it holds fewer
// than maxSharedCount) otherwise.
func shareString(strs map[string]string, b []byte) string {
	if len(b) > maxShared {
		return string(b)
	}
	if v, ok := strs[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(strs) < maxSharedCount {
		strs[v] = v
	}
	return v
}

// raw returns a copy of data[start:end].
func (f *refFast) raw(start, end int) json.RawMessage {
	n := end - start
	if n > 4096 {
		return append(json.RawMessage(nil), f.s.data[start:end]...)
	}
	if cap(f.arena)-len(f.arena) < n {
		f.arena = make([]byte, 0, 64<<10)
	}
	f.arena = append(f.arena, f.s.data[start:end]...)
	return json.RawMessage(f.arena[len(f.arena)-n : len(f.arena) : len(f.arena)])
}

// value reads a value and returns a copy of it.
func (f *refFast) value() json.RawMessage { return f.raw(f.s.value()) }

// key reads a member's key; it gives up on a key whose text is not its
// value. Keys repeat from object to object, so each is made once.
func (f *refFast) key() string {
	k, plain := f.s.key()
	if !plain {
		f.s.bad = true
	}
	return f.shared(k)
}

// extra reads the value of member key into *m; it gives up when *m has
// key already.
func (f *refFast) extra(m *map[string]json.RawMessage, key string) {
	f.extraRaw(m, key, f.value())
}

// extraRaw sets (*m)[key]; it gives up when *m has key already.
func (f *refFast) extraRaw(m *map[string]json.RawMessage, key string, raw json.RawMessage) {
	if *m == nil {
		*m = make(map[string]json.RawMessage)
	}
	if _, dup := (*m)[key]; dup {
		f.s.bad = true
	}
	(*m)[key] = raw
}

// once records that member bit of an object was read; it gives up when
// it was already.
func (f *refFast) once(seen *uint64, bit int) {
	if *seen&(1<<bit) != 0 {
		f.s.bad = true
	}
	*seen |= 1 << bit
}

// stringField reads a string or null into *p; null leaves it "". It
// returns the value's span.
func (f *refFast) stringField(p *string) (start, end int) {
	switch f.s.peek() {
	case '"':
		start, end, plain := f.s.str()
		if !f.s.bad {
			*p = f.str(start, end, plain)
		}
		return start, end
	case 'n':
		return f.s.value()
	}
	f.s.bad = true
	return 0, 0
}

// optString reads a string member whose empty value the event does not
// encode (omitempty): an empty one goes into *extra.
func (f *refFast) optString(p *string, extra *map[string]json.RawMessage, key string) {
	start, end := f.stringField(p)
	if *p == "" && !f.s.bad {
		f.extraRaw(extra, key, f.raw(start, end))
	}
}

// integer reads an integer or a string holding one, as refDecoder.integer
// and refDecoder.producer do.
func (f *refFast) integer() int64 {
	var text string
	switch c := f.s.peek(); {
	case c == '"':
		start, end, plain := f.s.str()
		if f.s.bad {
			return 0
		}
		text = stringValue(f.s.data[start:end], plain)
	case c == '-' || (c >= '0' && c <= '9'):
		start, end := f.s.value()
		text = string(f.s.data[start:end])
	default:
		f.s.bad = true
		return 0
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		f.s.bad = true
	}
	return n
}

// idValue reads an artifact id, a string or a number, as idString does.
func (f *refFast) idValue() string {
	switch c := f.s.peek(); {
	case c == '"':
		start, end, plain := f.s.str()
		return f.str(start, end, plain)
	case c == '-' || (c >= '0' && c <= '9'):
		start, end := f.s.value()
		return string(f.s.data[start:end])
	}
	f.s.bad = true
	return ""
}

// ids reads a list of artifact ids as refDecoder.ids does; it returns
// the value's span too.
func (f *refFast) ids() (ids []string, start, end int) {
	c := f.s.peek()
	start = f.s.i
	switch {
	case c == 'n':
		f.s.value()
	case c == '[':
		f.s.i++
		for more := f.s.open(']'); more; more = f.s.next(']') {
			ids = append(ids, f.idValue())
		}
	default:
		ids = []string{f.idValue()}
	}
	return ids, start, f.s.i
}

// optIDs reads a list of ids whose empty value the event does not encode.
func (f *refFast) optIDs(p *[]string, extra *map[string]json.RawMessage, key string) {
	ids, start, end := f.ids()
	*p = ids
	if len(ids) == 0 && !f.s.bad {
		f.extraRaw(extra, key, f.raw(start, end))
	}
}

// array reads the opening bracket of an array member that may be null;
// it reports whether an array follows, and gives up on any other value.
func (f *refFast) array() bool {
	switch f.s.peek() {
	case '[':
		f.s.i++
		return true
	case 'n':
		f.s.value()
		return false
	}
	f.s.bad = true
	return false
}

// trace reads the top-level object.
func (f *refFast) trace() (start *RunStart, actions []*refAction, artifacts []*refArtifact, tail []refEvent) {
	s := &f.s
	if s.peek() != '{' {
		s.bad = true
		return
	}
	s.i++
	start = &RunStart{}
	var seen uint64
	var residuals, telemetry []refEvent
	var outcome json.RawMessage
	hasActions := false
	for more := s.open('}'); more && !s.bad; more = s.next('}') {
		switch key := f.key(); key {
		case "actions":
			f.once(&seen, 0)
			if hasActions = f.array(); hasActions && f.index != nil {
				f.indexActions()
			} else if hasActions {
				actions = f.actionList()
			}
		case "artifacts":
			f.once(&seen, 1)
			if f.array() {
				artifacts = f.artifactList()
			}
		case "residuals", "telemetry":
			bit, list := 2, &residuals
			if key == "telemetry" {
				bit, list = 3, &telemetry
			}
			f.once(&seen, bit)
			valStart := s.peek()
			from := s.i
			if f.array() {
				*list = f.streamList(key)
			}
			if valStart == 'n' || (len(*list) == 0 && !s.bad) {
				f.extraRaw(&start.Extra, key, f.raw(from, s.i))
			}
		case "outcome":
			f.once(&seen, 4)
			outcome = f.value()
			if string(outcome) == "null" {
				f.extraRaw(&start.Extra, key, outcome)
			}
		case "trace_id":
			f.once(&seen, 5)
			f.stringField(&start.TraceID)
		case "trigger":
			f.once(&seen, 6)
			start.Trigger = f.value()
		case "agent":
			f.once(&seen, 7)
			f.optString(&start.Agent, &start.Extra, key)
		case "high_stakes_paths":
			f.once(&seen, 8)
			f.paths(start)
		default:
			f.extra(&start.Extra, key)
		}
	}
	s.ws()
	if s.i != len(s.data) || !hasActions || start.TraceID == "" {
		s.bad = true
	}
	if s.bad {
		return
	}
	tail = append(residuals, telemetry...)
	return start, actions, artifacts, append(tail, f.end(outcome))
}

// paths reads high_stakes_paths as encoding/json decodes a []string.
func (f *refFast) paths(start *RunStart) {
	from := f.s.peek()
	i := f.s.i
	if from == '[' {
		start.HighStakesPaths = []string{}
	}
	if f.array() {
		for more := f.s.open(']'); more; more = f.s.next(']') {
			var p string
			f.stringField(&p)
			start.HighStakesPaths = append(start.HighStakesPaths, p)
		}
	}
	if len(start.HighStakesPaths) == 0 && !f.s.bad {
		f.extraRaw(&start.Extra, "high_stakes_paths", f.raw(i, f.s.i))
	}
}

// streamList reads the elements of residuals or telemetry as events.
func (f *refFast) streamList(key string) []refEvent {
	var out []refEvent
	for more := f.s.open(']'); more && !f.s.bad; more = f.s.next(']') {
		i := len(out)
		if key == "telemetry" {
			out = append(out, refEvent{Event{Type: TypeTelemetry, Telemetry: f.value()}, refOrigin{key, i}})
			continue
		}
		if f.s.peek() != '{' {
			f.s.bad = true
			break
		}
		id, raw := f.residual()
		if id == "" {
			id = "residual-" + strconv.Itoa(i+1)
		}
		out = append(out, refEvent{Event{Type: TypeResidual, Residual: &Artifact{ID: id, Type: "Residual", Payload: raw}}, refOrigin{key, i}})
	}
	return out
}

// residual reads an entry of the residuals list: its id member, as
// residualID reads it ("" for none), and the entry.
func (f *refFast) residual() (id string, raw json.RawMessage) {
	s := &f.s
	from := s.i
	s.i++
	seen := false
	for more := s.open('}'); more && !s.bad; more = s.next('}') {
		if f.key() != "id" {
			s.value()
			continue
		}
		if seen {
			s.bad = true
		}
		seen = true
		switch c := s.peek(); {
		case c == '"' || c == '-' || (c >= '0' && c <= '9'):
			id = f.idValue()
		default:
			s.value()
		}
	}
	return id, f.raw(from, s.i)
}

// end builds the terminal event as refDecoder.end does, giving up where
// that warns.
func (f *refFast) end(raw json.RawMessage) refEvent {
	finish := refEvent{Event{Type: TypeRunFinish, End: &RunEnd{Outcome: raw}}, refOrigin{"outcome", -1}}
	if raw == nil || isNull(raw) {
		finish.End = &RunEnd{Implied: true}
		return finish
	}
	sub := refFast{s: refScan{data: raw}, strs: f.strs}
	switch raw[0] {
	case '"':
		start, end, plain := sub.s.str()
		if t, known := outcomeTypes[stringValue(raw[start:end], plain)]; known && !sub.s.bad {
			finish.Type = t
			return finish
		}
	case '{':
		sub.s.i++
		name, seen := "", false
		for more := sub.s.open('}'); more && !sub.s.bad; more = sub.s.next('}') {
			if sub.key() != "type" {
				sub.s.value()
				continue
			}
			if seen || sub.s.peek() != '"' {
				sub.s.bad = true
				break
			}
			seen = true
			if start, end, plain := sub.s.str(); !sub.s.bad {
				name = stringValue(raw[start:end], plain)
			}
		}
		if t, known := outcomeTypes[name]; known && !sub.s.bad {
			finish.Type = t
			return finish
		}
	}
	f.s.bad = true
	return finish
}

// newAction returns a new action of the current slab.
func (f *refFast) newAction() *refAction {
	if len(f.actions) == cap(f.actions) {
		f.actions = make([]refAction, 0, 256)
	}
	f.actions = f.actions[:len(f.actions)+1]
	return &f.actions[len(f.actions)-1]
}

// actionList reads the elements of actions and sorts them by id, as
// refDecoder.actions does; it gives up on a repeated id. A long array's
// second half is read on another goroutine (readAhead) and taken when
// this one's reading arrives exactly where that one began.
func (f *refFast) actionList() []*refAction {
	var actions []*refAction
	ahead := f.readAhead()
	for more := f.s.open(']'); more && !f.s.bad; more = f.s.next(']') {
		if f.s.peek() != '{' {
			f.s.bad = true
			break
		}
		if ahead != nil && f.s.i >= ahead.at {
			if f.s.i == ahead.at {
				actions = f.join(actions, ahead)
				ahead = nil
				break
			}
			ahead.abandon()
			ahead = nil
		}
		actions = append(actions, f.action(len(actions)))
	}
	if ahead != nil {
		ahead.abandon()
	}
	sorted := true
	for i := 1; i < len(actions) && sorted; i++ {
		sorted = actions[i-1].ID < actions[i].ID
	}
	if !sorted && !f.s.bad {
		seen := make(map[int64]bool, len(actions))
		for _, a := range actions {
			if seen[a.ID] {
				f.s.bad = true
			}
			seen[a.ID] = true
		}
		slices.SortStableFunc(actions, func(a, b *refAction) int { return cmp.Compare(a.ID, b.ID) })
	}
	return actions
}

// parallelActionsMin is how many bytes must follow the opening bracket of
// the actions array for actionList to read ahead on another goroutine.
var parallelActionsMin = 1 << 20

// readAheadJoins counts the read-aheads actionList took (for tests).
var readAheadJoins atomic.Int64

// actionsAhead is the reading of an actions array from one of its
// elements on, on another goroutine.
type actionsAhead struct {
	at      int // the offset of the element it begins with
	g       refFast
	actions []*refAction
	stop    atomic.Bool
	done    chan struct{}
}

// readAhead starts reading actions from the first place past the middle
// of the rest of the document where an element of an array of objects
// may begin (a '{' after "}" and ","). Whether it is an element of the
// actions array is known only when actionList arrives there; nil when the
// rest is short, there is one processor, or no such place.
func (f *refFast) readAhead() *actionsAhead {
	rest := len(f.s.data) - f.s.i
	if rest < parallelActionsMin || runtime.GOMAXPROCS(0) < 2 {
		return nil
	}
	at := objectElementStart(f.s.data, f.s.i+rest/2)
	if at < 0 {
		return nil
	}
	h := &actionsAhead{at: at, g: refFast{s: refScan{data: f.s.data, i: at, depth: f.s.depth}, strs: make(map[string]string)}, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		g := &h.g
		for more := true; more && !g.s.bad && !h.stop.Load(); more = g.s.next(']') {
			if g.s.peek() != '{' {
				g.s.bad = true
				break
			}
			h.actions = append(h.actions, g.action(len(h.actions)))
		}
	}()
	return h
}

// join appends to actions those h read, once it is done, and continues
// where it stopped (past the closing bracket, or where it gave up).
func (f *refFast) join(actions []*refAction, h *actionsAhead) []*refAction {
	<-h.done
	readAheadJoins.Add(1)
	f.s.i, f.s.bad = h.g.s.i, f.s.bad || h.g.s.bad
	for _, a := range h.actions {
		a.index += len(actions)
	}
	return append(actions, h.actions...)
}

// abandon stops h and waits for it: actionList did not arrive where it
// began, so what it read is not the array's.
func (h *actionsAhead) abandon() {
	h.stop.Store(true)
	<-h.done
}

// objectElementStart returns the offset of the first '{' at or after i
// that follows a '}' and a ',' with only whitespace between, or -1.
func objectElementStart(data []byte, i int) int {
	for i < len(data) {
		j := bytes.IndexByte(data[i:], '}')
		if j < 0 {
			return -1
		}
		i += j + 1
		k := skipSpace(data, i)
		if k < len(data) && data[k] == ',' {
			if k = skipSpace(data, k+1); k < len(data) && data[k] == '{' {
				return k
			}
		}
	}
	return -1
}

// skipSpace returns the offset of the first byte at or after i that is
// not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// action reads the index-th action, whose opening brace is next.
func (f *refFast) action(index int) *refAction {
	s := &f.s
	s.i++
	a := f.newAction()
	a.index = index
	a.fast = true
	var seen uint64
	hasID := false
	for more := s.open('}'); more && !s.bad; more = s.next('}') {
		key := f.key()
		bit, p := actionString(&a.Action, key)
		switch {
		case p != nil:
			f.once(&seen, bit)
			if key == "type" {
				f.stringField(p)
			} else if key == "status" {
				a.status = f.raw(f.stringField(p))
			} else {
				f.optString(p, &a.Extra, key)
			}
		case key == "id":
			f.once(&seen, 40)
			a.ID, hasID = f.integer(), true
		case key == "inputs":
			f.once(&seen, 41)
			f.optIDs(&a.Inputs, &a.Extra, key)
		case key == "outputs":
			f.once(&seen, 42)
			var start, end int
			a.Outputs, start, end = f.ids()
			a.outputs = f.raw(start, end)
		case key == "evidence":
			f.once(&seen, 43)
			f.evidence(a)
		default:
			if raw := actionRaw(&a.Action, key); raw != nil {
				f.once(&seen, 44+slices.Index(actionRawKeys, key))
				*raw = f.value()
			} else {
				f.extra(&a.Extra, key)
			}
		}
	}
	if !hasID {
		s.bad = true
	}
	return a
}

// actionRawKeys are the members of an action kept as raw JSON.
var actionRawKeys = []string{"request", "payload", "constraints", "requester"}

// actionRaw returns the raw member key of a, or nil.
func actionRaw(a *Action, key string) *json.RawMessage {
	switch key {
	case "request":
		return &a.Request
	case "payload":
		return &a.Payload
	case "constraints":
		return &a.Constraints
	case "requester":
		return &a.Requester
	}
	return nil
}

// actionString returns the string member key of a and its bit for once,
// or nil.
func actionString(a *Action, key string) (int, *string) {
	switch key {
	case "type":
		return 0, &a.Type
	case "category":
		return 1, &a.Category
	case "label":
		return 2, &a.Label
	case "rationale":
		return 3, &a.Rationale
	case "detail":
		return 4, &a.Detail
	case "result_summary":
		return 5, &a.ResultSummary
	case "status":
		return 6, &a.Status
	case "timestamp":
		return 7, &a.Timestamp
	case "capability":
		return 8, &a.Capability
	case "toolName":
		return 9, &a.ToolName
	case "connectorId":
		return 10, &a.ConnectorID
	case "actionType":
		return 11, &a.ActionType
	case "actionClass":
		return 12, &a.ActionClass
	case "reversibility":
		return 13, &a.Reversibility
	case "riskLevel":
		return 14, &a.Risk
	case "workerId":
		return 15, &a.WorkerID
	case "specialist":
		return 16, &a.Specialist
	case "taskId":
		return 17, &a.TaskID
	}
	return 0, nil
}

// evidence reads an action's evidence list as refDecoder.evidence does.
func (f *refFast) evidence(a *refAction) {
	s := &f.s
	s.peek()
	from := s.i
	if f.array() {
		for more := s.open(']'); more && !s.bad; more = s.next(']') {
			if s.peek() != '{' {
				s.bad = true
				break
			}
			s.i++
			var ev Evidence
			var seen uint64
			for more := s.open('}'); more && !s.bad; more = s.next('}') {
				switch key := f.key(); key {
				case "type":
					f.once(&seen, 0)
					f.stringField(&ev.Type)
				case "ref":
					f.once(&seen, 1)
					f.optString(&ev.Ref, &ev.Extra, key)
				default:
					f.extra(&ev.Extra, key)
				}
			}
			a.Evidence = append(a.Evidence, ev)
		}
	}
	if a.Evidence == nil && !s.bad {
		f.extraRaw(&a.Extra, "evidence", f.raw(from, s.i))
	}
}

// artifactList reads the elements of artifacts.
func (f *refFast) artifactList() []*refArtifact {
	var artifacts []*refArtifact
	for more := f.s.open(']'); more && !f.s.bad; more = f.s.next(']') {
		if f.s.peek() != '{' {
			f.s.bad = true
			break
		}
		artifacts = append(artifacts, f.artifact(len(artifacts)))
	}
	return artifacts
}

// artifact reads the index-th artifact, whose opening brace is next.
func (f *refFast) artifact(index int) *refArtifact {
	s := &f.s
	s.i++
	a := &refArtifact{index: index}
	var seen uint64
	for more := s.open('}'); more && !s.bad; more = s.next('}') {
		switch key := f.key(); key {
		case "artifact_id":
			f.once(&seen, 0)
			a.ID = f.idValue()
		case "artifact_type":
			f.once(&seen, 1)
			f.stringField(&a.Type)
		case "name":
			f.once(&seen, 2)
			f.optString(&a.Name, &a.Extra, key)
		case "ref":
			f.once(&seen, 3)
			f.optString(&a.Ref, &a.Extra, key)
		case "created_at":
			f.once(&seen, 4)
			f.optString(&a.CreatedAt, &a.Extra, key)
		case "derived_from":
			f.once(&seen, 5)
			f.optIDs(&a.DerivedFrom, &a.Extra, key)
		case "supersedes":
			f.once(&seen, 6)
			f.optIDs(&a.Supersedes, &a.Extra, key)
		case "producer_action_id":
			f.once(&seen, 7)
			if s.peek() == 'n' {
				f.extra(&a.Extra, key)
				break
			}
			n := f.integer()
			a.ProducerActionID = &n
		case "payload":
			f.once(&seen, 8)
			a.Payload = f.value()
		default:
			f.extra(&a.Extra, key)
		}
	}
	return a
}
