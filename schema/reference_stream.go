package schema

import (
	"cmp"
	"slices"
	"time"
)

// EachReferenceEvent converts the reference trace data as
// DecodeReferenceFast does, but hands the events to fn one at a time, in
// order, instead of returning them all: besides data, only an index of
// the actions (where each begins, its id), the other members of the trace
// and the event being handed stay in memory. fn may keep the event.
//
// The trace is read twice. The first reading decodes everything but the
// actions, which it only indexes, and gives up before any event is handed
// on a trace that is not shaped like a clean one. The second decodes the
// actions in order of id as their events are handed; it may still give up
// on an action, after some events were handed. ok reports whether every
// event was handed; when false, the caller drops what it did with those it
// got and reads the trace with DecodeReferenceGeneral, which says what is
// wrong with it. When ok, the events handed are those DecodeReferenceFast
// returns.
func EachReferenceEvent(data []byte, fn func(*Event)) (ok bool) {
	f := refFast{s: refScan{data: data}, strs: make(map[string]string), index: &actionIndex{}}
	start, _, artifacts, tail := f.trace()
	if f.s.bad {
		return false
	}
	ix := f.index
	if !ix.sort() {
		return false
	}
	produced := producedBy(artifacts)
	arts := placeArtifacts(artifacts, ix.position, ix.firstUse)
	h := refHander{f: &f, start: start, produced: produced, fn: fn}
	if !h.firstTime(ix, arts) {
		return false
	}
	h.emit(Event{Type: TypeRunStart, Start: start})
	k := 0
	artifactsUpTo := func(slot int) {
		for ; k < len(arts) && arts[k].slot <= slot && !h.bad; k++ {
			h.emit(Event{Type: TypeArtifact, Artifact: &arts[k].art.Artifact})
		}
	}
	artifactsUpTo(0)
	for i := range ix.refs {
		artifactsUpTo(2*i + 1)
		if a := h.action(ix.refs[i]); a != nil {
			h.emit(Event{Type: TypeAction, Action: &a.Action})
		}
		artifactsUpTo(2*i + 2)
		if h.bad {
			return false
		}
	}
	for _, e := range tail {
		h.emit(e.Event)
	}
	return !h.bad
}

// actionIndex is what the first reading of EachReferenceEvent keeps of
// the actions.
type actionIndex struct {
	refs []actionRef
	// inputs maps each input of an action to the smallest id of the
	// actions that take it.
	inputs map[string]int64
}

// actionRef is an indexed action: its id, where its opening brace is,
// its place in the file, and whether its timestamp parses.
type actionRef struct {
	id      int64
	at      int
	index   int
	hasTime bool
}

// sort sorts the index by id, as refFast.actionList sorts the actions; it
// reports false on a repeated id.
func (ix *actionIndex) sort() bool {
	byID := func(a, b actionRef) int { return cmp.Compare(a.id, b.id) }
	if !slices.IsSortedFunc(ix.refs, byID) {
		slices.SortStableFunc(ix.refs, byID)
	}
	for i := 1; i < len(ix.refs); i++ {
		if ix.refs[i-1].id == ix.refs[i].id {
			return false
		}
	}
	return true
}

// position returns the position, in id order, of the action whose id is
// *id.
func (ix *actionIndex) position(id *int64) (int, bool) {
	if id == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(ix.refs, *id, func(r actionRef, id int64) int { return cmp.Compare(r.id, id) })
}

// firstUse maps each input to the position of the first action, in id
// order, that takes it (inputsFirstUse over the index).
func (ix *actionIndex) firstUse() map[string]int {
	out := make(map[string]int, len(ix.inputs))
	for in, id := range ix.inputs {
		out[in], _ = ix.position(&id)
	}
	return out
}

// indexActions reads the elements of actions as the first reading of
// EachReferenceEvent does: each must be an object with an integer id;
// its inputs and whether its timestamp parses are noted, every other
// member is skipped (the second reading checks them), nesting counted as
// the second reading counts it.
func (f *refFast) indexActions() {
	s := &f.s
	ix := f.index
	for more := s.open(']'); more && !s.bad; more = s.next(']') {
		if s.peek() != '{' {
			s.bad = true
			break
		}
		ref := actionRef{at: s.i, index: len(ix.refs)}
		s.i++
		hasID := false
		var inputs []string
		for more := s.open('}'); more && !s.bad; more = s.next('}') {
			switch f.key() {
			case "id":
				if hasID {
					s.bad = true
				}
				ref.id, hasID = f.integer(), true
			case "timestamp":
				var ts string
				f.stringField(&ts)
				ref.hasTime = !parseTime(ts).IsZero()
			case "inputs":
				inputs, _, _ = f.ids()
			case "evidence":
				f.skipEvidence()
			default:
				s.value()
			}
		}
		if !hasID {
			s.bad = true
		}
		for _, in := range inputs {
			if first, seen := ix.inputs[in]; !seen || ref.id < first {
				if ix.inputs == nil {
					ix.inputs = make(map[string]int64)
				}
				ix.inputs[in] = ref.id
			}
		}
		ix.refs = append(ix.refs, ref)
	}
}

// skipEvidence passes over an action's evidence as refFast.evidence reads
// it, its list and entries not counted as nesting, so that the scanner's
// depth bound refuses the same values in both readings.
func (f *refFast) skipEvidence() {
	s := &f.s
	if s.peek() != '[' {
		s.value()
		return
	}
	s.i++
	for more := s.open(']'); more && !s.bad; more = s.next(']') {
		if s.peek() != '{' {
			s.value()
			continue
		}
		s.i++
		for more := s.open('}'); more && !s.bad; more = s.next('}') {
			s.key()
			s.value()
		}
	}
}

// refHander hands the events of EachReferenceEvent's second reading to
// fn, numbering, stamping and validating them as refDecoder.assemble does.
type refHander struct {
	f        *refFast
	start    *RunStart
	produced map[int64][]string
	fn       func(*Event)
	seq      uint64
	prev     time.Time // the ts of the event before
	bad      bool      // an action or an event was refused
}

// firstTime finds the ts that the events before the first one with a
// time of its own take (as stamp does): the first action timestamp or
// artifact created_at, in event order, that parses; the Unix epoch when
// none does.
func (h *refHander) firstTime(ix *actionIndex, arts []placed) bool {
	k := 0
	artifactTime := func(slot int) bool {
		for ; k < len(arts) && arts[k].slot <= slot; k++ {
			if t := parseTime(arts[k].art.CreatedAt); !t.IsZero() {
				h.prev = t
				return true
			}
		}
		return false
	}
	if artifactTime(0) {
		return true
	}
	for i, r := range ix.refs {
		if artifactTime(2*i + 1) {
			return true
		}
		if r.hasTime {
			a := h.action(r)
			if a == nil {
				return false
			}
			h.prev = parseTime(a.Timestamp)
			return !h.prev.IsZero()
		}
		if artifactTime(2*i + 2) {
			return true
		}
	}
	h.prev = time.Unix(0, 0).UTC()
	return true
}

// action decodes the action r indexes and completes it (finishAction);
// nil when it is refused.
func (h *refHander) action(r actionRef) *refAction {
	h.f.s.i = r.at
	a := h.f.action(r.index)
	if h.f.s.bad {
		h.bad = true
		return nil
	}
	finishAction(a, h.produced)
	return a
}

// emit numbers, stamps and validates e and hands it to fn.
func (h *refHander) emit(e Event) {
	if h.bad {
		return
	}
	h.seq++
	e.V, e.RunID, e.Seq = EnvelopeVersion, h.start.TraceID, h.seq
	switch {
	case e.Action != nil:
		e.TS = parseTime(e.Action.Timestamp)
	case e.Artifact != nil:
		e.TS = parseTime(e.Artifact.CreatedAt)
	}
	if e.TS.IsZero() {
		e.TS = h.prev
	}
	h.prev = e.TS
	if e.Validate() != nil {
		h.bad = true
		return
	}
	h.fn(&e)
}
