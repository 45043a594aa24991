package schema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Outcome types of a reference trace and the terminal events they become.
var outcomeTypes = map[string]EventType{
	"ProcessCompleted":   TypeRunFinish,
	"ProcessAborted":     TypeRunError,
	"ProcessInterrupted": TypeRunCancel,
}

// outcomeList is the outcome types for messages.
const outcomeList = "ProcessCompleted, ProcessAborted or ProcessInterrupted"

// streamFields are the top-level members of a reference trace that become
// events of their own rather than fields of RunStart.
var streamFields = []string{"actions", "artifacts", "residuals", "telemetry", "outcome"}

// DecodeReference converts a reference trace (SEMANTICS.md §1), the JSON
// object in data, to its event stream; name is the file name used in errors.
// The package documentation describes the conversion. On error it returns
// no events and a DecodeErrors naming every problem found.
func DecodeReference(name string, data []byte) ([]Event, error) {
	events, _, err := DecodeReferenceWarn(name, data)
	return events, err
}

// DecodeReferenceWarn is DecodeReference that also returns the warnings:
// a value read in a form the format does not define but that can still be
// read (a number where a string is expected, an outcome without a type, …)
// or left out (an evidence entry that is not an object, …). Each names the
// value and says how it was read; the trace is converted all the same.
func DecodeReferenceWarn(name string, data []byte) ([]Event, DecodeErrors, error) {
	if events, ok := DecodeReferenceFast(data); ok {
		return events, nil, nil
	}
	return DecodeReferenceGeneral(name, data)
}

// DecodeReferenceGeneral is DecodeReferenceWarn through the general
// reader alone, which finds and places every problem and warning. It is
// what DecodeReferenceWarn falls back on when DecodeReferenceFast gives up;
// a caller that runs the two itself (to treat the fast one's allocations
// differently, say) calls it then.
func DecodeReferenceGeneral(name string, data []byte) ([]Event, DecodeErrors, error) {
	d := refDecoder{data: data}
	events := d.decode()
	if len(d.problems) > 0 {
		return nil, nil, d.report(name)
	}
	return events, d.reportWarnings(name), nil
}

// refDecoder holds the state of one DecodeReference call.
type refDecoder struct {
	data     []byte
	problems []located // offset -1: at the value Field names
	warnings []warning
}

// warning is a value read leniently, and how it was read.
type warning struct {
	err  *FieldError
	read string // e.g. "read as ProcessCompleted"
}

// refOrigin is where in the trace an event came from, for errors: the
// top-level member list and the index in it (-1 for the member itself),
// e.g. "actions" and 3; list is "" for run.start.
type refOrigin struct {
	list  string
	index int
}

// refEvent is an event under construction and its origin.
type refEvent struct {
	Event
	refOrigin
}

// String is the path of what the event came from, e.g. "actions[3]".
func (o refOrigin) String() string {
	if o.index < 0 {
		return o.list
	}
	return o.list + "[" + strconv.Itoa(o.index) + "]"
}

// fail records a problem with the value at fe.Field.
func (d *refDecoder) fail(fe *FieldError) {
	if len(d.problems) <= maxErrors {
		d.problems = append(d.problems, located{-1, fe})
	}
}

// warn records a value read leniently: read says how.
func (d *refDecoder) warn(fe *FieldError, read string) {
	if len(d.warnings) <= maxErrors {
		d.warnings = append(d.warnings, warning{fe, read})
	}
}

// reportWarnings locates the warnings in file, sorted by position; nil
// when there are none.
func (d *refDecoder) reportWarnings(file string) DecodeErrors {
	if len(d.warnings) == 0 {
		return nil
	}
	paths := make([]string, len(d.warnings))
	for i, w := range d.warnings {
		paths[i] = w.err.Field
	}
	offs := locate(d.data, paths...)
	errs := errorList{file: file}
	for i, w := range d.warnings {
		line, col := lineCol(d.data, offs[i])
		errs.add(line, col, w.err)
		if last := errs.errs[len(errs.errs)-1]; last.Err == error(w.err) {
			last.Msg += "; " + w.read
		}
	}
	out, _ := errs.err().(DecodeErrors)
	return out
}

// report locates the problems in file, sorted by position.
func (d *refDecoder) report(file string) error {
	var paths []string
	for _, p := range d.problems {
		if p.off < 0 {
			paths = append(paths, p.err.Field)
		}
	}
	var offs []int
	if len(paths) > 0 { // then data is well-formed
		offs = locate(d.data, paths...)
	}
	errs := errorList{file: file}
	for _, p := range d.problems {
		if p.off < 0 {
			p.off, offs = offs[0], offs[1:]
		}
		line, col := lineCol(d.data, p.off)
		errs.add(line, col, p.err)
	}
	return errs.err()
}

// lineCol converts a byte offset in data to a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	before := data[:off]
	return bytes.Count(before, []byte("\n")) + 1, off - bytes.LastIndexByte(before, '\n')
}

// decode converts the trace, recording problems; it returns nil if there
// are any.
func (d *refDecoder) decode() []Event {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(d.data, &top); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			d.problems = append(d.problems, located{max(int(syntax.Offset)-1, 0), &FieldError{Err: ErrMalformedJSON, Got: syntax.Error()}})
		} else {
			d.fail(&FieldError{Err: ErrWrongType, Expected: "an object", Got: describeRaw(bytes.TrimSpace(d.data))})
		}
		return nil
	}
	if top == nil {
		d.fail(&FieldError{Err: ErrWrongType, Expected: "an object", Got: "null"})
		return nil
	}
	start := d.start(top)
	actions := d.actions(d.list(top, "actions", true))
	artifacts := d.artifacts(d.list(top, "artifacts", false))
	finishActions(actions, artifacts)
	var tail []refEvent // residuals, telemetry and the closing event
	for i, raw := range d.list(top, "residuals", false) {
		path := fmt.Sprintf("residuals[%d]", i)
		if obj, ok := d.lenientObject(raw, path); ok {
			r := &Artifact{ID: residualID(obj, i), Type: "Residual", Payload: raw}
			tail = append(tail, refEvent{Event{Type: TypeResidual, Residual: r}, refOrigin{"residuals", i}})
		}
	}
	for i, raw := range d.list(top, "telemetry", false) {
		tail = append(tail, refEvent{Event{Type: TypeTelemetry, Telemetry: raw}, refOrigin{"telemetry", i}})
	}
	tail = append(tail, d.end(top["outcome"]))
	if len(d.problems) > 0 {
		return nil
	}
	return d.assemble(start, actions, artifacts, tail)
}

// assemble puts the events in order, numbers and stamps them, and
// validates them, recording problems.
func (d *refDecoder) assemble(start *RunStart, actions []*refAction, artifacts []*refArtifact, tail []refEvent) []Event {
	n := 1 + len(actions) + len(artifacts) + len(tail)
	out, from := make([]Event, 0, n), make([]refOrigin, 0, n)
	out, from = append(out, Event{Type: TypeRunStart, Start: start}), append(from, refOrigin{})
	out, from = order(out, from, actions, artifacts)
	for _, e := range tail {
		out, from = append(out, e.Event), append(from, e.refOrigin)
	}
	stamp(out)
	badRunID := false
	for i := range out {
		e := &out[i]
		e.V, e.RunID, e.Seq = EnvelopeVersion, start.TraceID, uint64(i+1)
		if err := e.Validate(); err != nil {
			var fe *FieldError
			errors.As(err, &fe)
			fe.Field = refPath(from[i].String(), fe.Field)
			if fe.Field == "trace_id" && badRunID {
				continue // every event has it: once is enough
			}
			badRunID = badRunID || fe.Field == "trace_id"
			d.fail(fe)
		}
	}
	return out
}

// refPath maps the path of a field in an event converted from origin back
// to the trace: "action.type" from "actions[3]" is "actions[3].type".
func refPath(origin, field string) string {
	if field == "runId" {
		return "trace_id"
	}
	_, rest, _ := strings.Cut(field, ".")
	return joinPath(origin, rest)
}

// start builds the run.start body from the top-level members that do not
// become events of their own. Those that would produce no event (an empty
// list, a null outcome) are kept in Extra, like unknown members.
func (d *refDecoder) start(top map[string]json.RawMessage) *RunStart {
	obj := make(map[string]json.RawMessage)
	for k, raw := range top {
		if !slices.Contains(streamFields, k) {
			obj[k] = raw
		}
	}
	s := &RunStart{}
	d.members(obj, s, "", "extra")
	if s.TraceID == "" {
		d.fail(&FieldError{Field: "trace_id", Err: ErrMissingField, Expected: "a non-empty string"})
	}
	s.Extra = leftovers(obj, s)
	for _, k := range []string{"residuals", "telemetry", "outcome"} {
		if raw, ok := top[k]; ok && (isNull(raw) || (k != "outcome" && isEmptyList(raw))) {
			if s.Extra == nil {
				s.Extra = make(map[string]json.RawMessage)
			}
			s.Extra[k] = raw
		}
	}
	return s
}

// end builds the terminal event from the outcome. A reference trace is a
// finished record: with no outcome (absent or null) it ends as completed,
// by a run.finish marked Implied. An outcome that is a string is read as its
// type; one whose type is missing or unknown, or that is not an object,
// ends the run as completed too, with a warning.
func (d *refDecoder) end(raw json.RawMessage) refEvent {
	finish := refEvent{Event{Type: TypeRunFinish, End: &RunEnd{Outcome: raw}}, refOrigin{"outcome", -1}}
	if raw == nil || isNull(raw) {
		finish.End = &RunEnd{Implied: true}
		return finish
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		if t, known := outcomeTypes[name]; known {
			return refEvent{Event{Type: t, End: &RunEnd{Outcome: raw}}, refOrigin{"outcome", -1}}
		}
		d.warn(&FieldError{Field: "outcome", Err: ErrInvalidValue, Expected: "an object with a type: " + outcomeList, Got: describeRaw(raw)}, "the run ends as completed")
		return finish
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		d.warn(&FieldError{Field: "outcome", Err: ErrWrongType, Expected: "an object", Got: describeRaw(raw)}, "the run ends as completed")
		return finish
	}
	rawType, ok := obj["type"]
	_ = json.Unmarshal(rawType, &name) // anything but a string leaves name empty
	t, known := outcomeTypes[name]
	switch {
	case !ok:
		d.warn(&FieldError{Field: "outcome.type", Err: ErrMissingField, Expected: outcomeList}, "the run ends as completed")
	case !known:
		d.warn(&FieldError{Field: "outcome.type", Err: ErrInvalidValue, Expected: outcomeList, Got: describeRaw(rawType)}, "the run ends as completed")
	default:
		finish.Type = t
	}
	return finish
}

// refAction is an action of the trace and the members it came from:
// obj from refDecoder; from refFast (fast), the status and outputs
// members, which go into Extra if the action ends up without them.
type refAction struct {
	Action
	obj             map[string]json.RawMessage
	index           int
	fast            bool
	status, outputs json.RawMessage
}

// actions decodes the actions and sorts them by id. Their Outputs and Extra
// are completed by finishActions once the artifacts are known.
func (d *refDecoder) actions(raws []json.RawMessage) []*refAction {
	var actions []*refAction
	seen := make(map[int64]int)
	for i, raw := range raws {
		path := fmt.Sprintf("actions[%d]", i)
		obj, ok := d.object(raw, path)
		if !ok {
			continue
		}
		a := &refAction{obj: obj, index: i}
		a.ID, ok = d.integer(obj, "id", path)
		if ok {
			if first, dup := seen[a.ID]; dup {
				d.fail(&FieldError{Field: path + ".id", Err: ErrInvalidValue, Expected: "a unique id", Got: fmt.Sprintf("%d, the id of actions[%d]", a.ID, first)})
			}
			seen[a.ID] = i
		}
		a.Inputs = d.ids(obj, "inputs", path)
		a.Outputs = d.ids(obj, "outputs", path)
		a.Evidence = d.evidence(obj, path)
		d.members(obj, &a.Action, path, "id", "inputs", "outputs", "evidence", "artifacts", "extra")
		actions = append(actions, a)
	}
	slices.SortStableFunc(actions, func(a, b *refAction) int { return cmp.Compare(a.ID, b.ID) })
	return actions
}

// refArtifact is an artifact of the trace and its index there.
type refArtifact struct {
	Artifact
	index int
}

// artifacts decodes the artifacts, in file order.
func (d *refDecoder) artifacts(raws []json.RawMessage) []*refArtifact {
	var artifacts []*refArtifact
	for i, raw := range raws {
		path := fmt.Sprintf("artifacts[%d]", i)
		obj, ok := d.object(raw, path)
		if !ok {
			continue
		}
		a := &refArtifact{index: i}
		a.ID = d.id(obj, "artifact_id", path)
		a.DerivedFrom = d.ids(obj, "derived_from", path)
		a.Supersedes = d.ids(obj, "supersedes", path)
		a.ProducerActionID = d.producer(obj, path)
		d.members(obj, &a.Artifact, path, "artifact_id", "derived_from", "supersedes", "producer_action_id", "extra")
		a.Extra = leftovers(obj, &a.Artifact)
		artifacts = append(artifacts, a)
	}
	return artifacts
}

// finishActions adds to each action's Outputs the artifacts it produced,
// derives its Status when the trace gives none, and keeps in Extra every
// member the action does not reproduce.
func finishActions(actions []*refAction, artifacts []*refArtifact) {
	produced := producedBy(artifacts)
	for _, a := range actions {
		finishAction(a, produced)
	}
}

// producedBy maps each producer action id to the artifacts it produced,
// in file order.
func producedBy(artifacts []*refArtifact) map[int64][]string {
	produced := make(map[int64][]string)
	for _, art := range artifacts {
		if p := art.ProducerActionID; p != nil {
			produced[*p] = append(produced[*p], art.ID)
		}
	}
	return produced
}

// finishAction completes one action as finishActions does.
func finishAction(a *refAction, produced map[int64][]string) {
	a.Outputs = unique(append(a.Outputs, produced[a.ID]...))
	if a.Status == "" {
		a.Status = DeriveStatus(a.ResultSummary)
	}
	if !a.fast {
		a.Extra = leftovers(a.obj, &a.Action)
		return
	}
	if a.status != nil && a.Status == "" {
		a.Extra = withMember(a.Extra, "status", a.status)
	}
	if a.outputs != nil && len(a.Outputs) == 0 {
		a.Extra = withMember(a.Extra, "outputs", a.outputs)
	}
}

// unique returns ids without repeats, in order, or nil when ids is empty.
func unique(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(ids))
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// withMember returns m with m[key] = raw, making m if it is nil.
func withMember(m map[string]json.RawMessage, key string, raw json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		m = make(map[string]json.RawMessage)
	}
	m[key] = raw
	return m
}

// order appends to events (and their origins to from) the actions and
// artifacts interleaved as placeArtifacts places them. actions are sorted
// by id.
func order(events []Event, from []refOrigin, actions []*refAction, artifacts []*refArtifact) ([]Event, []refOrigin) {
	arts := placeArtifacts(artifacts, func(id *int64) (int, bool) { return producerPos(actions, id) },
		func() map[string]int { return inputsFirstUse(actions) })
	k := 0
	emit := func(upTo int) {
		for ; k < len(arts) && arts[k].slot <= upTo; k++ {
			events = append(events, Event{Type: TypeArtifact, Artifact: &arts[k].art.Artifact})
			from = append(from, refOrigin{"artifacts", arts[k].art.index})
		}
	}
	emit(0)
	for i, a := range actions {
		emit(2*i + 1)
		events = append(events, Event{Type: TypeAction, Action: &a.Action})
		from = append(from, refOrigin{"actions", a.index})
		emit(2*i + 2)
	}
	return events, from
}

// placed is an artifact and its slot among the actions sorted by id: 0
// before everything, 2i+1 just before action i, 2i+2 just after it.
type placed struct {
	slot int
	art  *refArtifact
}

// placeArtifacts gives each artifact its slot, sorted by slot and in file
// order within one: just after the action that produced it (its position
// given by producerPos); with no producer in the trace, just before the
// first action that takes it as input, by id or name (firstUse, asked for
// once when needed, maps an input to that action's position), or first of
// all when no action does.
func placeArtifacts(artifacts []*refArtifact, producerPos func(id *int64) (int, bool), firstUse func() map[string]int) []placed {
	arts := make([]placed, len(artifacts))
	var uses map[string]int
	for j, art := range artifacts {
		if i, ok := producerPos(art.ProducerActionID); ok {
			arts[j] = placed{2*i + 2, art}
			continue
		}
		if uses == nil {
			uses = firstUse()
		}
		slot := 0
		for _, key := range []string{art.ID, art.Name} {
			if i, ok := uses[key]; ok && key != "" && (slot == 0 || 2*i+1 < slot) {
				slot = 2*i + 1
			}
		}
		arts[j] = placed{slot, art}
	}
	slices.SortStableFunc(arts, func(a, b placed) int { return cmp.Compare(a.slot, b.slot) })
	return arts
}

// producerPos returns the position of the action whose id is *id, in
// actions sorted by id (a trace whose ids repeat is refused).
func producerPos(actions []*refAction, id *int64) (int, bool) {
	if id == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(actions, *id, func(a *refAction, id int64) int { return cmp.Compare(a.ID, id) })
}

// inputsFirstUse maps each input of the actions to the position of the
// first action that takes it.
func inputsFirstUse(actions []*refAction) map[string]int {
	firstUse := make(map[string]int)
	for i, a := range actions {
		for _, in := range a.Inputs {
			if _, ok := firstUse[in]; !ok {
				firstUse[in] = i
			}
		}
	}
	return firstUse
}

// stamp sets each event's ts: its action's timestamp or its artifact's
// created_at when that parses as RFC 3339, else the previous event's ts;
// events before the first such time take it, and without one every event
// is stamped with the Unix epoch.
func stamp(events []Event) {
	first := time.Time{}
	for i := range events {
		e := &events[i]
		switch {
		case e.Action != nil:
			e.TS = parseTime(e.Action.Timestamp)
		case e.Artifact != nil:
			e.TS = parseTime(e.Artifact.CreatedAt)
		}
		if first.IsZero() {
			first = e.TS
		}
	}
	if first.IsZero() {
		first = time.Unix(0, 0).UTC()
	}
	prev := first
	for i := range events {
		if events[i].TS.IsZero() {
			events[i].TS = prev
		}
		prev = events[i].TS
	}
}

// parseTime parses an RFC 3339 timestamp, returning the zero time when s is
// not one.
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// DeriveStatus derives an action's status from its result_summary, as the
// reference does: "fail" or "error" anywhere (any case) means failed, except
// where a count of none is given ("0 failed", "no errors": test-runner
// summaries say that of passing runs); otherwise "pass", "completed" or
// "success" anywhere, or "ok" as a word, means completed; otherwise the
// status is unknown ("").
func DeriveStatus(summary string) string {
	s := noneFailed.ReplaceAllString(strings.ToLower(summary), "")
	switch {
	case strings.Contains(s, "fail"), strings.Contains(s, "error"):
		return ActionFailed
	case strings.Contains(s, "pass"), strings.Contains(s, "completed"), strings.Contains(s, "success"),
		slices.Contains(strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }), "ok"):
		return ActionCompleted
	}
	return ""
}

// noneFailed matches a count of no failures: "0 failed", "no errors",
// "zero failures".
var noneFailed = regexp.MustCompile(`\b(?:0|no|zero)\s+(?:fail|error)\w*`)

// residualID is the artifact id of the i-th entry of a legacy residuals
// list: its "id" member when that is a non-empty string or a number, else
// "residual-<i+1>".
func residualID(entry map[string]json.RawMessage, i int) string {
	if id, ok := idString(entry["id"]); ok && id != "" {
		return id
	}
	return "residual-" + strconv.Itoa(i+1)
}

// list returns the elements of the array member key of top. A missing or
// null member is an error when required.
func (d *refDecoder) list(top map[string]json.RawMessage, key string, required bool) []json.RawMessage {
	raw, ok := top[key]
	if !ok || isNull(raw) {
		if required {
			d.fail(&FieldError{Field: key, Err: ErrMissingField, Expected: "an array"})
		}
		return nil
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		fe := &FieldError{Field: key, Err: ErrWrongType, Expected: "an array", Got: describeRaw(raw)}
		if required {
			d.fail(fe)
		} else {
			d.warn(fe, "read as none")
		}
	}
	return elems
}

// lenientObject is object for a value the trace can do without: one that
// is not an object is left out with a warning.
func (d *refDecoder) lenientObject(raw json.RawMessage, path string) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		d.warn(&FieldError{Field: path, Err: ErrWrongType, Expected: "an object", Got: describeRaw(raw)}, "left out")
		return nil, false
	}
	return obj, true
}

// object decodes raw, the value at path, as an object.
func (d *refDecoder) object(raw json.RawMessage, path string) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		d.fail(&FieldError{Field: path, Err: ErrWrongType, Expected: "an object", Got: describeRaw(raw)})
		return nil, false
	}
	return obj, true
}

// members decodes the members of obj that v (a pointer to a struct) names,
// except those in exclude, into v.
func (d *refDecoder) members(obj map[string]json.RawMessage, v any, path string, exclude ...string) {
	rv := reflect.ValueOf(v).Elem()
	for name, f := range jsonFields(rv.Type()) {
		raw, ok := obj[name]
		if !ok || slices.Contains(exclude, name) {
			continue
		}
		field := rv.FieldByIndex(f.Index)
		if json.Unmarshal(raw, field.Addr().Interface()) != nil {
			d.coerce(field, raw, joinPath(path, name))
		}
	}
}

// coerce reads raw, which does not decode into field, leniently: a number
// or a boolean where a string is expected is read as its JSON text, a
// string where a list of strings is expected as a list of one; anything
// else leaves the field empty. Either way with a warning: what is left out
// stays in the event's Extra (see leftovers), so nothing is lost.
func (d *refDecoder) coerce(field reflect.Value, raw json.RawMessage, path string) {
	fe := &FieldError{Field: path, Err: ErrWrongType, Expected: describeType(field.Type()), Got: describeRaw(raw)}
	var scalar any
	isScalar := json.Unmarshal(raw, &scalar) == nil
	switch scalar.(type) {
	case float64, bool:
	case string:
		if field.Kind() == reflect.Slice && field.Type().Elem().Kind() == reflect.String {
			field.Set(reflect.ValueOf([]string{scalar.(string)}))
			d.warn(fe, "read as a list of one")
			return
		}
		isScalar = false
	default:
		isScalar = false
	}
	if isScalar && field.Kind() == reflect.String {
		field.SetString(string(raw))
		d.warn(fe, "read as "+strconv.Quote(string(raw)))
		return
	}
	d.warn(fe, "left out")
}

// leftovers returns the members of obj that v, encoded, does not reproduce:
// unknown members, and known ones whose value encodes to nothing (null, "",
// []). Keeping them in Extra is what makes the conversion lossless. v's own
// Extra must be empty.
func leftovers(obj map[string]json.RawMessage, v any) map[string]json.RawMessage {
	var back map[string]json.RawMessage
	b, _ := json.Marshal(v) // cannot fail: every raw value in v came from valid JSON
	_ = json.Unmarshal(b, &back)
	var extra map[string]json.RawMessage
	for k, raw := range obj {
		if _, ok := back[k]; !ok {
			if extra == nil {
				extra = make(map[string]json.RawMessage)
			}
			extra[k] = raw
		}
	}
	return extra
}

// integer decodes the required integer member key of obj.
func (d *refDecoder) integer(obj map[string]json.RawMessage, key, path string) (int64, bool) {
	raw, ok := obj[key]
	if !ok {
		d.fail(&FieldError{Field: joinPath(path, key), Err: ErrMissingField, Expected: "an integer"})
		return 0, false
	}
	text := string(raw)
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &text) // a string: the integer may be inside
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		d.fail(&FieldError{Field: joinPath(path, key), Err: ErrWrongType, Expected: "an integer", Got: describeRaw(raw)})
		return 0, false
	}
	return n, true
}

// producer decodes producer_action_id: an integer, a string holding one, or
// null.
func (d *refDecoder) producer(obj map[string]json.RawMessage, path string) *int64 {
	raw, ok := obj["producer_action_id"]
	if !ok || isNull(raw) {
		return nil
	}
	s := string(raw)
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &s) // a string: the integer is inside
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return &n
	}
	d.warn(&FieldError{Field: path + ".producer_action_id", Err: ErrWrongType, Expected: "an integer", Got: describeRaw(raw)}, "read as no producer")
	return nil
}

// id decodes the member key of obj as an artifact id: a string or a number.
func (d *refDecoder) id(obj map[string]json.RawMessage, key, path string) string {
	raw, ok := obj[key]
	if !ok {
		return ""
	}
	id, ok := idString(raw)
	if !ok {
		d.fail(&FieldError{Field: joinPath(path, key), Err: ErrWrongType, Expected: "a string or a number", Got: describeRaw(raw)})
	}
	return id
}

// ids decodes the member key of obj as a list of artifact ids; a single id
// is a list of one, and null is no list.
func (d *refDecoder) ids(obj map[string]json.RawMessage, key, path string) []string {
	raw, ok := obj[key]
	if !ok || isNull(raw) {
		return nil
	}
	if id, ok := idString(raw); ok {
		return []string{id}
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		d.warn(&FieldError{Field: joinPath(path, key), Err: ErrWrongType, Expected: "an id or an array of ids", Got: describeRaw(raw)}, "read as none")
		return nil
	}
	var ids []string
	for i, elem := range elems {
		id, ok := idString(elem)
		if !ok {
			id, ok = refID(elem)
			fe := &FieldError{Field: fmt.Sprintf("%s.%s[%d]", path, key, i), Err: ErrWrongType, Expected: "a string or a number", Got: describeRaw(elem)}
			if !ok {
				d.warn(fe, "left out")
				continue
			}
			d.warn(fe, "read as its id "+strconv.Quote(id))
		}
		ids = append(ids, id)
	}
	return ids
}

// refID returns the id of an object that refers to an artifact: its
// artifact_id or id member.
func refID(raw json.RawMessage) (string, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return "", false
	}
	for _, k := range []string{"artifact_id", "id"} {
		if id, ok := idString(obj[k]); ok && id != "" {
			return id, true
		}
	}
	return "", false
}

// idString returns the id a JSON string or number holds.
func idString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err == nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return "", false
	}
	return n.String(), true
}

// evidence decodes an action's evidence list.
func (d *refDecoder) evidence(obj map[string]json.RawMessage, path string) []Evidence {
	raw, ok := obj["evidence"]
	if !ok || isNull(raw) {
		return nil
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		d.warn(&FieldError{Field: path + ".evidence", Err: ErrWrongType, Expected: "an array", Got: describeRaw(raw)}, "read as none")
		return nil
	}
	var evidence []Evidence
	for i, elem := range elems {
		epath := fmt.Sprintf("%s.evidence[%d]", path, i)
		eobj, ok := d.lenientObject(elem, epath)
		if !ok {
			continue
		}
		var ev Evidence
		d.members(eobj, &ev, epath, "extra")
		ev.Extra = leftovers(eobj, &ev)
		evidence = append(evidence, ev)
	}
	return evidence
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// isEmptyList reports whether raw is an empty JSON array.
func isEmptyList(raw json.RawMessage) bool {
	var elems []json.RawMessage
	return json.Unmarshal(raw, &elems) == nil && len(elems) == 0
}

// EncodeReference writes the events of one run as a reference trace. It
// inverts DecodeReference: DecodeReference(EncodeReference(events)) gives
// events back for every stream DecodeReference produced. Other streams keep
// what the format can hold: actions (an action's inline Artifacts join the
// artifacts list), artifacts, residuals, telemetry and the outcome (built
// from the event type and RunEnd.Message when the event has none); seq and
// the ts of events without a timestamp of their own are not kept. Where a
// named field and an Extra member have the same name, the named field wins.
func EncodeReference(events []Event) ([]byte, error) {
	if len(events) == 0 {
		return nil, &FieldError{Err: ErrMissingField, Expected: "at least one event"}
	}
	runID := events[0].RunID
	top := map[string]any{}
	actions, artifacts := []any{}, []any{}
	var residuals, telemetry []any
	for i, e := range events {
		if err := encodeEvent(e, runID, top, &actions, &artifacts, &residuals, &telemetry); err != nil {
			return nil, fmt.Errorf("events[%d]: %w", i, err)
		}
	}
	if _, ok := top["trace_id"]; !ok {
		top["trace_id"] = runID
	}
	top["actions"], top["artifacts"] = actions, artifacts
	if len(residuals) > 0 {
		top["residuals"] = residuals
	}
	if len(telemetry) > 0 {
		top["telemetry"] = telemetry
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeEvent adds one event to the reference trace under construction.
func encodeEvent(e Event, runID string, top map[string]any, actions, artifacts, residuals, telemetry *[]any) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.RunID != runID {
		return &FieldError{Field: "runId", Err: ErrMixedRuns, Expected: strconv.Quote(runID), Got: strconv.Quote(e.RunID)}
	}
	switch {
	case e.Start != nil:
		s := *e.Start
		s.Extra = nil
		obj, err := withExtra(&s, e.Start.Extra)
		for k, v := range obj {
			top[k] = v
		}
		return err
	case e.Action != nil:
		a := *e.Action
		a.Extra, a.Artifacts, a.Evidence = nil, nil, nil
		obj, err := withExtra(&a, e.Action.Extra)
		if err != nil {
			return err
		}
		if len(e.Action.Evidence) > 0 {
			evidence := make([]map[string]json.RawMessage, len(e.Action.Evidence))
			for i, ev := range e.Action.Evidence {
				ev.Extra = nil
				evidence[i], _ = withExtra(&ev, e.Action.Evidence[i].Extra) // cannot fail: no raw values
			}
			obj["evidence"], _ = json.Marshal(evidence)
		}
		*actions = append(*actions, obj)
		for _, art := range e.Action.Artifacts {
			if art.ProducerActionID == nil {
				art.ProducerActionID = &a.ID
			}
			if err := addArtifact(artifacts, art); err != nil {
				return err
			}
		}
	case e.Artifact != nil:
		return addArtifact(artifacts, *e.Artifact)
	case e.Residual != nil:
		entry, err := residualEntry(e.Residual, len(*residuals))
		*residuals = append(*residuals, entry)
		return err
	case e.Telemetry != nil:
		*telemetry = append(*telemetry, e.Telemetry)
	case e.Type.IsTerminal():
		if e.End == nil || !e.End.Implied {
			top["outcome"] = outcomeOf(e)
		}
	}
	return nil
}

// withExtra encodes v (whose own Extra is empty) as an object and adds the
// members of extra that it does not have.
func withExtra(v any, extra map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	for k, raw := range extra {
		if _, ok := obj[k]; !ok {
			obj[k] = raw
		}
	}
	return obj, nil
}

// addArtifact appends an artifact to the artifacts list.
func addArtifact(artifacts *[]any, a Artifact) error {
	extra := a.Extra
	a.Extra = nil
	obj, err := withExtra(&a, extra)
	*artifacts = append(*artifacts, obj)
	return err
}

// residualEntry encodes a residual event as the i-th entry of the legacy
// residuals list: its payload, with an "id" member when the payload does
// not already yield the artifact id.
func residualEntry(r *Artifact, i int) (any, error) {
	var entry map[string]json.RawMessage
	if len(r.Payload) > 0 {
		if err := json.Unmarshal(r.Payload, &entry); err != nil {
			return nil, &FieldError{Field: "residual.payload", Err: ErrWrongType, Expected: "an object", Got: describeRaw(r.Payload)}
		}
	}
	if entry != nil && residualID(entry, i) == r.ID {
		return r.Payload, nil
	}
	if entry == nil {
		entry = make(map[string]json.RawMessage)
	}
	entry["id"], _ = json.Marshal(r.ID)
	return entry, nil
}

// outcomeOf returns the outcome object of a terminal event.
func outcomeOf(e Event) any {
	if e.End != nil && len(e.End.Outcome) > 0 {
		return e.End.Outcome
	}
	obj := map[string]string{}
	for name, t := range outcomeTypes {
		if t == e.Type {
			obj["type"] = name
		}
	}
	if e.End != nil && e.End.Message != "" {
		obj["message"] = e.End.Message
	}
	return obj
}
