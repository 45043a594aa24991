package trace

import (
	"encoding/json"
	"slices"

	"github.com/ponens/ponens/schema"
)

// Builder folds a run's events, in seq order, into a Trace, calling OnSeal
// for each position as it is sealed. Events must already be validated and
// deduplicated. A Builder is not safe for concurrent use.
type Builder struct {
	T *Trace
	// OnSeal, when set, is called once per position, in order, when the
	// position's atoms are fixed.
	OnSeal func(*Position)

	open          *Position
	waiting       map[string]bool // declared outputs of the open position not yet arrived
	next          int             // index of the next position
	dropPositions bool
	dropGraph     bool
	slimStart     bool
	slimProducers bool
	slimIndex     bool      // index producers with slim positions when positions are dropped
	scratch       *Position // the one position reused when nothing is kept (made on first use)
}

// NewBuilder returns a builder for the run runID.
func NewBuilder(runID string) *Builder {
	return &Builder{T: &Trace{RunID: runID}} // maps are made on first use
}

// DropPositions makes the builder forget each position once OnSeal has seen
// it, and keep no telemetry, so that a monitor's memory does not grow with
// the number of actions: only structural rules read those. The artifact
// graph is kept: lineage reads it.
func (b *Builder) DropPositions() { b.dropPositions, b.T.dropped = true, true }

// IndexProducers keeps, when positions are dropped, the output index
// (Trace.ProducersOf) with a slim copy of each producing position: its
// index, its action's id and declared outputs, and what it produced. That is
// all a rule reading the actions only through outputs needs
// (ltl.ReadsActionsByOutputs), at a fraction of the memory of the events.
func (b *Builder) IndexProducers() { b.slimIndex = true }

// DropGraph makes the builder keep no artifact graph: an artifact is known
// only to the open position that produced it. Inputs then do not resolve, so
// only rule sets that read neither lineage nor targets of inputs (pure
// temporal ones) may use it.
func (b *Builder) DropGraph() { b.dropGraph = true }

// SlimStart makes the builder keep of run.start only what formulas read:
// that it came, its high-stakes paths, the reference models it declares and
// files_modified (Trace.Start has no other field set). A monitor of many short runs holds less that way.
func (b *Builder) SlimStart() { b.slimStart = true }

// SlimProducers makes the builder, when positions are dropped, point the
// artifacts a position produced at a slim copy of it once OnSeal has seen
// it (its index, its action's id and declared outputs, what it produced):
// the artifact graph then keeps no event. Only for rule sets that never read
// an artifact's producer (the producer field); lineage needs no more than
// whether an artifact has a producer.
func (b *Builder) SlimProducers() { b.slimProducers = true }

// Add folds one event in.
func (b *Builder) Add(ev *schema.Event) {
	t := b.T
	t.Events++
	t.Version++
	t.LastSeq = ev.Seq
	switch ev.Type {
	case schema.TypeRunStart:
		t.Start = ev.Start
		switch {
		case t.Start == nil:
			t.Start = &schema.RunStart{}
		case b.slimStart:
			t.Start = &schema.RunStart{HighStakesPaths: slices.Clip(t.Start.HighStakesPaths), Extra: startFacts(t.Start.Extra)}
		}
	case schema.TypeAction:
		b.Seal()
		var p *Position
		if b.dropPositions && b.dropGraph {
			// Nothing refers to a position after OnSeal: reuse one.
			if b.scratch == nil {
				b.scratch = &Position{}
			}
			*b.scratch = Position{Index: b.next, Event: ev, Action: ev.Action, Produced: b.scratch.Produced[:0]}
			p = b.scratch
		} else {
			p = &Position{Index: b.next, Event: ev, Action: ev.Action}
		}
		b.next++
		for _, id := range ev.Action.Inputs {
			if a := t.Lookup(id); a != nil {
				p.Inputs = append(p.Inputs, a)
			}
		}
		b.open = p
		b.waiting = nil
		if len(ev.Action.Outputs) > 0 {
			b.waiting = make(map[string]bool, len(ev.Action.Outputs))
			for _, id := range ev.Action.Outputs {
				b.waiting[id] = true
			}
		}
		for i := range ev.Action.Artifacts {
			b.addArtifact(&ev.Action.Artifacts[i], false, true)
		}
		if len(b.waiting) == 0 {
			b.Seal()
		}
	case schema.TypeArtifact:
		b.addArtifact(ev.Artifact, ev.Artifact.Type == "Residual", false)
	case schema.TypeResidual:
		b.addArtifact(ev.Residual, true, false)
	case schema.TypeTelemetry:
		if !b.dropPositions { // only structural rules read telemetry
			var v any
			_ = json.Unmarshal(ev.Telemetry, &v)
			t.Telemetry = append(t.Telemetry, v)
		}
	default:
		if ev.Type.IsTerminal() {
			b.Seal()
			t.End = ev
			t.Version++
		}
	}
}

// addArtifact adds an artifact to the graph. An inline one (carried in its
// action's event) is that action's product; another is the open position's
// when it names that action as producer or is listed, by id or name, in its
// outputs. The open position seals once every declared output has come, but
// not in the middle of an action's inline artifacts.
func (b *Builder) addArtifact(sa *schema.Artifact, residual, inline bool) {
	t := b.T
	if residual && sa.Type == "" {
		c := *sa // events are shared: never write to one
		c.Type = "Residual"
		sa = &c
	}
	a := &Artifact{Artifact: sa, order: len(t.Artifacts)}
	t.Version++
	for _, id := range sa.DerivedFrom {
		if p := t.Lookup(id); p != nil {
			a.Parents = append(a.Parents, p)
		}
	}
	if p := b.open; p != nil {
		mine := inline || b.waiting[sa.ID] || sa.Name != "" && b.waiting[sa.Name] ||
			(sa.ProducerActionID != nil && *sa.ProducerActionID == p.Action.ID)
		if mine {
			a.Producer = p
			p.Produced = append(p.Produced, a)
			delete(b.waiting, sa.ID)
			delete(b.waiting, sa.Name)
		}
	}
	if !inline && b.open != nil && len(b.waiting) == 0 && len(b.open.Action.Outputs) > 0 && a.Producer == b.open {
		defer b.Seal()
	}
	if b.dropGraph {
		return
	}
	t.Artifacts = append(t.Artifacts, a)
	if t.byID == nil {
		t.byID, t.byName = map[string]*Artifact{}, map[string]*Artifact{}
	}
	if sa.ID != "" {
		t.byID[sa.ID] = a
	}
	if sa.Name != "" {
		t.byName[sa.Name] = a
	}
	if residual || sa.Type == "Residual" {
		t.Residuals = append(t.Residuals, a)
	}
}

// Seal seals the open position, if any: what it produced is fixed and
// OnSeal is called. The run's end seals the last position; call Seal directly only
// to force it (the decision service does, to evaluate a proposed step).
func (b *Builder) Seal() {
	p := b.open
	if p == nil {
		return
	}
	b.open, b.waiting = nil, nil
	t := b.T
	t.Version++
	p.nArtifacts, p.nResiduals, p.nTelemetry = len(t.Artifacts), len(t.Residuals), len(t.Telemetry)
	p.started = t.Start != nil
	var slim *Position
	switch {
	case !b.dropPositions:
		t.Positions = append(t.Positions, p)
		t.index(p)
	case b.slimIndex && (len(p.Action.Outputs) > 0 || len(p.Produced) > 0):
		slim = p.slim()
		t.index(slim)
	}
	if b.OnSeal != nil {
		b.OnSeal(p)
	}
	if b.dropPositions && b.slimProducers && !b.dropGraph && len(p.Produced) > 0 { // without a graph nothing keeps them
		if slim == nil {
			slim = p.slim()
		}
		for _, a := range p.Produced {
			a.Producer = slim
		}
	}
	if p == b.scratch { // nothing refers to it any more: let its event go
		clear(p.Produced)
		*p = Position{Produced: p.Produced[:0]}
	}
}

// slim is a copy of a sealed position with only what the output index and
// the artifacts' producer links need: no event, but its own target.
func (p *Position) slim() *Position {
	return &Position{Index: p.Index, Action: &schema.Action{ID: p.Action.ID, Outputs: p.Action.Outputs},
		target: p.Target(), targetDone: true, // the lineage targets of what it produced read it
		Produced: slices.Clone(p.Produced), nArtifacts: p.nArtifacts, nResiduals: p.nResiduals, nTelemetry: p.nTelemetry, started: p.started}
}

// index lists p in the output index under each id and name it outputs.
func (t *Trace) index(p *Position) {
	add := func(key string) {
		if t.producers == nil {
			t.producers = map[string][]*Position{}
		}
		if ps := t.producers[key]; len(ps) == 0 || ps[len(ps)-1] != p {
			t.producers[key] = append(ps, p)
		}
	}
	for _, id := range p.Action.Outputs {
		add(OutputID + id)
	}
	for _, a := range p.Produced {
		add(OutputID + a.ID)
		add(OutputName + a.Name)
	}
}

// Open reports whether a position is open: its action has arrived but not
// all of its declared outputs.
func (b *Builder) Open() bool { return b.open != nil }

// Build folds a whole run's events into a Trace.
func Build(runID string, events []schema.Event) *Trace {
	b := NewBuilder(runID)
	for i := range events {
		b.Add(&events[i])
	}
	b.Seal()
	return b.T
}

// Proposed returns the position the action a would take if it arrived now
// (inputs resolved, inline artifacts as its products), standing in the run
// as its latest position until undo is called: the decision service judges
// a step before it happens, and undoes it.
func (b *Builder) Proposed(ev *schema.Event) (p *Position, undo func()) {
	a := ev.Action
	p = &Position{Index: b.next, Event: ev, Action: a}
	for _, id := range a.Inputs {
		if x := b.T.Lookup(id); x != nil {
			p.Inputs = append(p.Inputs, x)
		}
	}
	for i := range a.Artifacts {
		x := &Artifact{Artifact: &a.Artifacts[i], Producer: p, order: len(b.T.Artifacts)}
		for _, id := range x.DerivedFrom {
			if q := b.T.Lookup(id); q != nil {
				x.Parents = append(x.Parents, q)
			}
		}
		p.Produced = append(p.Produced, x)
	}
	t := b.T
	p.nArtifacts, p.nResiduals, p.nTelemetry = len(t.Artifacts), len(t.Residuals), len(t.Telemetry)
	p.started = t.Start != nil
	if b.dropPositions {
		return p, func() {}
	}
	n := len(t.Positions)
	t.Positions = append(t.Positions, p)
	return p, func() { t.Positions = t.Positions[:n] }
}
