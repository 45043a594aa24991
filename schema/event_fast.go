package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// eventFast decodes one event line in a single pass over its bytes
// (refScan), without reflection, for a line encoding/json decodes into an
// Event with no error. In the objects it reads member by member (the
// event, start, end, action, evidence, artifacts) every key must be
// written exactly as Event's field tags spell it, once; anything else
// there (a key in another case, with an escape sequence or unknown, a
// repeated member), a null, a value of another type or trailing data
// makes it give up, and decodeEvent decodes the line with the general
// decoders instead. Extra maps and raw values are taken as they are, a
// repeated key in them only noted (maybeDup) for decodeEvent to refuse.
// On what it accepts it gives the Event encoding/json gives
// (FuzzDecodeEventFast).
type eventFast struct {
	s refScan
	// strs, when not nil, holds short strings already made, to share them
	// between the events of a batch (a run id, an action type, a status).
	strs map[string]string
	// maybeDup is set when an object of the line may have a key twice
	// (decodeFast's maybeDup). The members of the objects eventFast reads
	// are checked as it reads them (each key once, exactly as the tags
	// spell it); an extra map's keys are compared ignoring case, and the
	// objects inside a raw value are left to scanShape.
	maybeDup bool
}

// decodeEventFast decodes line with eventFast, sharing strings through
// strs when it is not nil; ok is false when it gives up. maybeDup has
// decodeFast's meaning.
func decodeEventFast(line []byte, strs map[string]string) (ev Event, maybeDup, ok bool) {
	f := eventFast{s: refScan{data: line}, strs: strs}
	f.event(&ev)
	if !f.s.bad {
		f.s.ws()
		f.s.bad = f.s.i != len(line)
	}
	if f.s.bad {
		return Event{}, false, false
	}
	return ev, f.maybeDup, true
}

// key reads a member's key; it gives up on one written with an escape or
// not in UTF-8 (its text is not its value).
func (f *eventFast) key() []byte {
	k, plain := f.s.key()
	if !plain {
		f.s.bad = true
	}
	return k
}

// once records that member bit of an object was read, giving up when it
// was already: encoding/json would keep the later value, which the event
// decoders refuse.
func (f *eventFast) once(seen *uint64, bit int) {
	if *seen&(1<<bit) != 0 {
		f.s.bad = true
	}
	*seen |= 1 << bit
}

// object reads the opening brace of an object; it gives up on any other
// value (null included).
func (f *eventFast) object() bool {
	if f.s.peek() != '{' {
		f.s.bad = true
		return false
	}
	f.s.i++
	return true
}

// str reads a string.
func (f *eventFast) str() string {
	if f.s.peek() != '"' {
		f.s.bad = true
		return ""
	}
	start, end, plain := f.s.str()
	if f.s.bad {
		return ""
	}
	if !plain || f.strs == nil {
		return stringValue(f.s.data[start:end], plain)
	}
	return shareString(f.strs, f.s.data[start+1:end-1])
}

// number reads a number and returns its text.
func (f *eventFast) number() string {
	if c := f.s.peek(); c != '-' && (c < '0' || c > '9') {
		f.s.bad = true
		return ""
	}
	start, end := f.s.value()
	return string(f.s.data[start:end])
}

// int reads an integer as encoding/json reads one into an int field
// (which refuses one the int does not hold).
func (f *eventFast) int() int {
	n, err := strconv.ParseInt(f.number(), 10, strconv.IntSize)
	if err != nil {
		f.s.bad = true
	}
	return int(n)
}

// int64 reads an integer as encoding/json reads one into an int64 field.
func (f *eventFast) int64() int64 {
	n, err := strconv.ParseInt(f.number(), 10, 64)
	if err != nil {
		f.s.bad = true
	}
	return n
}

// uint64 reads an integer as encoding/json reads one into a uint64 field.
func (f *eventFast) uint64() uint64 {
	n, err := strconv.ParseUint(f.number(), 10, 64)
	if err != nil {
		f.s.bad = true
	}
	return n
}

// bool reads true or false.
func (f *eventFast) bool() bool {
	switch f.s.peek() {
	case 't':
		f.s.literal("true")
		return true
	case 'f':
		f.s.literal("false")
		return false
	}
	f.s.bad = true
	return false
}

// raw reads a value other than null and returns a copy of it, as
// encoding/json fills a json.RawMessage.
func (f *eventFast) raw() json.RawMessage {
	if f.s.peek() == 'n' {
		f.s.bad = true
		return nil
	}
	start, end := f.s.value()
	if f.s.bad {
		return nil
	}
	v := f.s.data[start:end]
	if bytes.IndexByte(v, '{') >= 0 {
		if _, dup := scanShape(v); dup {
			f.maybeDup = true
		}
	}
	return append(json.RawMessage(nil), v...)
}

// strList reads an array of strings; [] gives an empty slice, as
// encoding/json does.
func (f *eventFast) strList() []string {
	if f.s.peek() != '[' {
		f.s.bad = true
		return nil
	}
	f.s.i++
	list := []string{}
	for more := f.s.open(']'); more && !f.s.bad; more = f.s.next(']') {
		list = append(list, f.str())
	}
	return list
}

// maxExtraCompared is how many keys of an extra map extra compares with
// each other; a longer map is left to duplicateKey.
const maxExtraCompared = 8

// extra reads an extra map, comparing its keys ignoring case as
// duplicateKey does (for a map of up to maxExtraCompared keys).
func (f *eventFast) extra() map[string]json.RawMessage {
	if !f.object() {
		return nil
	}
	m := map[string]json.RawMessage{}
	for more := f.s.open('}'); more && !f.s.bad; more = f.s.next('}') {
		k := string(f.key())
		switch {
		case f.maybeDup:
		case len(m) >= maxExtraCompared:
			f.maybeDup = true
		default:
			for other := range m {
				if strings.EqualFold(other, k) {
					f.maybeDup = true
					break
				}
			}
		}
		m[k] = f.raw()
	}
	return m
}

// event reads the line's top-level object.
func (f *eventFast) event(ev *Event) {
	s := &f.s
	if !f.object() {
		return
	}
	var seen uint64
	for more := s.open('}'); more && !s.bad; more = s.next('}') {
		switch string(f.key()) {
		case "v":
			f.once(&seen, 0)
			ev.V = f.int()
		case "runId":
			f.once(&seen, 1)
			ev.RunID = f.str()
		case "seq":
			f.once(&seen, 2)
			ev.Seq = f.uint64()
		case "ts":
			f.once(&seen, 3)
			if s.peek() != '"' {
				s.bad = true
				break
			}
			start, end := s.value()
			if !s.bad && ev.TS.UnmarshalJSON(s.data[start:end]) != nil {
				s.bad = true
			}
		case "type":
			f.once(&seen, 4)
			ev.Type = EventType(f.str())
		case "start":
			f.once(&seen, 5)
			ev.Start = f.start()
		case "end":
			f.once(&seen, 6)
			ev.End = f.end()
		case "action":
			f.once(&seen, 7)
			ev.Action = f.action()
		case "artifact":
			f.once(&seen, 8)
			ev.Artifact = f.artifact()
		case "residual":
			f.once(&seen, 9)
			ev.Residual = f.artifact()
		case "telemetry":
			f.once(&seen, 10)
			ev.Telemetry = f.raw()
		default:
			s.bad = true
		}
	}
}

func (f *eventFast) start() *RunStart {
	if !f.object() {
		return nil
	}
	st := &RunStart{}
	var seen uint64
	for more := f.s.open('}'); more && !f.s.bad; more = f.s.next('}') {
		switch string(f.key()) {
		case "trace_id":
			f.once(&seen, 0)
			st.TraceID = f.str()
		case "trigger":
			f.once(&seen, 1)
			st.Trigger = f.raw()
		case "high_stakes_paths":
			f.once(&seen, 2)
			st.HighStakesPaths = f.strList()
		case "agent":
			f.once(&seen, 3)
			st.Agent = f.str()
		case "extra":
			f.once(&seen, 4)
			st.Extra = f.extra()
		default:
			f.s.bad = true
		}
	}
	return st
}

func (f *eventFast) end() *RunEnd {
	if !f.object() {
		return nil
	}
	e := &RunEnd{}
	var seen uint64
	for more := f.s.open('}'); more && !f.s.bad; more = f.s.next('}') {
		switch string(f.key()) {
		case "outcome":
			f.once(&seen, 0)
			e.Outcome = f.raw()
		case "message":
			f.once(&seen, 1)
			e.Message = f.str()
		case "implied":
			f.once(&seen, 2)
			e.Implied = f.bool()
		default:
			f.s.bad = true
		}
	}
	return e
}

func (f *eventFast) action() *Action {
	if !f.object() {
		return nil
	}
	a := &Action{}
	var seen uint64
	for more := f.s.open('}'); more && !f.s.bad; more = f.s.next('}') {
		key := string(f.key())
		if bit, p := actionString(a, key); p != nil {
			f.once(&seen, bit)
			*p = f.str()
			continue
		}
		switch key {
		case "id":
			f.once(&seen, 40)
			a.ID = f.int64()
		case "inputs":
			f.once(&seen, 41)
			a.Inputs = f.strList()
		case "outputs":
			f.once(&seen, 42)
			a.Outputs = f.strList()
		case "evidence":
			f.once(&seen, 43)
			a.Evidence = f.evidence()
		case "artifacts":
			f.once(&seen, 44)
			a.Artifacts = f.artifacts()
		case "extra":
			f.once(&seen, 45)
			a.Extra = f.extra()
		default:
			raw := actionRaw(a, key)
			if raw == nil {
				f.s.bad = true
				break
			}
			f.once(&seen, 46+slices.Index(actionRawKeys, key))
			*raw = f.raw()
		}
	}
	return a
}

func (f *eventFast) evidence() []Evidence {
	if f.s.peek() != '[' {
		f.s.bad = true
		return nil
	}
	f.s.i++
	list := []Evidence{}
	for more := f.s.open(']'); more && !f.s.bad; more = f.s.next(']') {
		if !f.object() {
			break
		}
		var e Evidence
		var seen uint64
		for more := f.s.open('}'); more && !f.s.bad; more = f.s.next('}') {
			switch string(f.key()) {
			case "type":
				f.once(&seen, 0)
				e.Type = f.str()
			case "ref":
				f.once(&seen, 1)
				e.Ref = f.str()
			case "extra":
				f.once(&seen, 2)
				e.Extra = f.extra()
			default:
				f.s.bad = true
			}
		}
		list = append(list, e)
	}
	return list
}

func (f *eventFast) artifacts() []Artifact {
	if f.s.peek() != '[' {
		f.s.bad = true
		return nil
	}
	f.s.i++
	list := []Artifact{}
	for more := f.s.open(']'); more && !f.s.bad; more = f.s.next(']') {
		a := f.artifact()
		if f.s.bad {
			break
		}
		list = append(list, *a)
	}
	return list
}

func (f *eventFast) artifact() *Artifact {
	if !f.object() {
		return nil
	}
	a := &Artifact{}
	var seen uint64
	for more := f.s.open('}'); more && !f.s.bad; more = f.s.next('}') {
		switch string(f.key()) {
		case "artifact_id":
			f.once(&seen, 0)
			a.ID = f.str()
		case "artifact_type":
			f.once(&seen, 1)
			a.Type = f.str()
		case "name":
			f.once(&seen, 2)
			a.Name = f.str()
		case "derived_from":
			f.once(&seen, 3)
			a.DerivedFrom = f.strList()
		case "producer_action_id":
			f.once(&seen, 4)
			n := f.int64()
			a.ProducerActionID = &n
		case "supersedes":
			f.once(&seen, 5)
			a.Supersedes = f.strList()
		case "payload":
			f.once(&seen, 6)
			a.Payload = f.raw()
		case "ref":
			f.once(&seen, 7)
			a.Ref = f.str()
		case "created_at":
			f.once(&seen, 8)
			a.CreatedAt = f.str()
		case "extra":
			f.once(&seen, 9)
			a.Extra = f.extra()
		default:
			f.s.bad = true
		}
	}
	return a
}
