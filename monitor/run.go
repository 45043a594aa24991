package monitor

import (
	"time"

	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// Run is the monitor of one run: it consumes the run's events in seq order
// and reports verdict transitions.
type Run struct {
	e     *Engine
	b     *trace.Builder
	rules []ruleState
	past  []uint64 // past-operator summaries of every rule, bit-packed

	positions int
	last      *schema.Event // the last event folded in, or nil when lastRaw holds it
	lastRaw   []byte        // the JSON of the last event (AddEncoded)
	ended     bool
	defStamp  int // trace.Version when the deferred caches were filled
}

// ruleState is one rule's state within a run, kept small: a run of twenty
// rules holds twenty of these.
type ruleState struct {
	res       *ob   // the obligation on the rest of the run; never ⊥ (see seal)
	witness   int64 // the action at which progression hit ⊥
	pastOff   int32
	status    status // last emitted
	leaning   leaning
	triggered bool // some not_applicable trigger held
	applies   bool // some action matched applies_when
	violated  bool
	atAction  bool       // violated at an action (witness set), not at the end
	extra     *ruleExtra // scoped summaries and deferred values, when the rule has them
}

// ruleExtra is the part of a rule's state only some rules need.
type ruleExtra struct {
	targets []map[string]bool           // per propTarget slot
	chains  []map[*trace.Artifact]uint8 // per propChain slot
	defVals []int8                      // deferred leaf values: 0 unknown, 1 false, 2 true
}

func (rs *ruleState) more() *ruleExtra {
	if rs.extra == nil {
		rs.extra = &ruleExtra{}
	}
	return rs.extra
}

// status is a verdict status as a byte; the zero value is the implicit
// initial satisfied.
type status uint8

const (
	stSatisfied status = iota
	stViolated
	stPending
	stUnresolved
)

var statusNames = [...]schema.VerdictStatus{schema.StatusSatisfied, schema.StatusViolated, schema.StatusPending, schema.StatusUnresolved}

// leaning is a pending verdict's leaning as a byte.
type leaning uint8

const (
	lnNone leaning = iota
	lnViolate
	lnSatisfy
)

var leaningNames = [...]schema.Leaning{"", schema.LeaningViolate, schema.LeaningSatisfy}

// chain memo bits: the producer's argument value is known, and its value;
// whether some artifact in the ancestry (itself included) has a producer
// whose value is the one looked for is memoised in the top bits.
const (
	chainProd    = 1 << 0 // producer's argument value known
	chainProdVal = 1 << 1
	chainAny     = 1 << 2 // memo known
	chainAnyVal  = 1 << 3
)

// Result is a rule's final state for a run.
type Result struct {
	RuleID  string
	Status  schema.VerdictStatus // satisfied, violated or unresolved
	Outcome eval.Outcome         // pass, fail or not_applicable by finite-trace semantics
	Witness int64                // the action at which a violation was detected; -1 when none
}

// Add consumes the next event of the run (validated, in seq order, without
// duplicates) and returns the verdict transitions it caused. The returned
// slice is the engine's: it is valid until the next Add or End on any run
// of the same engine.
func (r *Run) Add(ev *schema.Event) ([]schema.VerdictEvent, error) {
	if r.ended {
		return nil, ErrEnded
	}
	clear(r.e.out)
	r.e.out, r.e.outAt = r.e.out[:0], r.e.outAt[:0]
	r.last, r.lastRaw = ev, nil
	r.b.Add(ev)
	switch {
	case ev.Type.IsTerminal():
		r.finish(ev)
	case ev.Type != schema.TypeAction && r.positions > 0:
		// Context changed: position-independent leaves may lean otherwise.
		for i := range r.rules {
			rs := &r.rules[i]
			if rs.res.hasDef && rs.status == stPending {
				r.classify(i, ev)
			}
		}
	}
	return r.e.out, nil
}

// AddEncoded is Add for an event decoded from data, its JSON form, which
// the caller leaves as it is until its next Add, AddEncoded or End on the
// run (the buffer may then be reused for the next event): the run keeps
// data instead of the decoded event as its last event, and decodes it
// again only if an end-of-run verdict cites it. A decoded action is
// several times the size of its JSON, and with many short open runs the
// last events are a large part of what the runs hold.
func (r *Run) AddEncoded(ev *schema.Event, data []byte) ([]schema.VerdictEvent, error) {
	vs, err := r.Add(ev)
	if err == nil && !r.ended && !r.e.keepPositions { // kept positions hold the events anyway
		r.last, r.lastRaw = nil, data
	}
	return vs, err
}

// lastEvent is the last event folded in, nil when there was none.
func (r *Run) lastEvent() *schema.Event {
	if r.last == nil && r.lastRaw != nil {
		ev, err := schema.DecodeEvent("event", r.lastRaw)
		if err != nil {
			// It decoded once: only a caller that changed data gets here.
			// The verdicts still name the run and the seq.
			ev = schema.Event{V: schema.EnvelopeVersion, RunID: r.b.T.RunID, Seq: r.b.T.LastSeq}
		}
		r.last, r.lastRaw = &ev, nil
	}
	return r.last
}

// End ends a run that stopped without a closing event (idle too long, or
// the stream was cut): pending rules become unresolved.
func (r *Run) End() []schema.VerdictEvent {
	if r.ended {
		return nil
	}
	clear(r.e.out)
	r.e.out, r.e.outAt = r.e.out[:0], r.e.outAt[:0]
	r.b.Seal()
	r.finish(nil)
	return r.e.out
}

// VerdictTimes returns, for each verdict the last Add or End returned and
// in its order, the time (ts) of the event the verdict is on: the zero time
// for a verdict of a run that ended before any event. Like the verdicts, the
// slice is the engine's, valid until the next Add or End on any run of the
// same engine.
func (r *Run) VerdictTimes() []time.Time { return r.e.outAt }

// Ended reports whether the run has ended.
func (r *Run) Ended() bool { return r.ended }

// Trace returns the run as far as it has been read.
func (r *Run) Trace() *trace.Trace { return r.b.T }

// seal evaluates every rule at a sealed position.
func (r *Run) seal(p *trace.Position) {
	r.e.serial++
	first := r.positions == 0
	r.positions++
	if r.e.capEngine != nil && p.Action.Capability != "" {
		r.judgeToolCall(p)
	}
	for i, prog := range r.e.progs {
		rs := &r.rules[i]
		// A violated rule stays final, but one that decides steps (deny,
		// suspend, abort) keeps being followed for the decision service.
		if prog.capability || rs.violated && prog.mode == schema.ModeObserve {
			continue
		}
		vals := r.e.vals[i]
		r.evalProps(i, rs, p, first, vals)
		for _, t := range prog.triggers {
			rs.triggered = rs.triggered || t.eval(vals)
		}
		if sel := prog.opts.AppliesWhen; sel != nil && !rs.applies {
			rs.applies = sel.Matches(p)
		}
		before := rs.res
		next := r.e.transition(prog, before, vals)
		if next == r.e.in.false {
			// res keeps the obligation from before the violating step: as
			// if the step had been blocked, which is what deny means. The
			// decision service judges the next steps against it.
			if !rs.violated {
				rs.violated, rs.atAction, rs.witness = true, true, p.Action.ID
				r.emit(i, stViolated, lnNone, p.Event, r.e.in.blame(before, vals))
			}
			continue
		}
		rs.res = next
		if !rs.violated {
			r.classify(i, p.Event)
		}
	}
}

// judgeToolCall runs the POLICY.md authorization engine on a tool call: the
// rule that decides deny or require_approval is violated.
func (r *Run) judgeToolCall(p *trace.Position) {
	in := policymd.IntentFromAction(r.b.T.RunID, p.Action)
	for _, m := range r.e.capEngine.Matches(&in) {
		if i, ok := r.e.capRules[m.Rule]; ok {
			r.rules[i].triggered = true
		}
	}
	d := r.e.capEngine.Decide(&in)
	if d.Action == policymd.Allow || d.Rule == nil {
		return
	}
	i, ok := r.e.capRules[d.Rule]
	if !ok || r.rules[i].violated {
		return
	}
	rs := &r.rules[i]
	rs.violated, rs.atAction, rs.witness = true, true, p.Action.ID
	r.emit(i, stViolated, lnNone, p.Event, nil)
}

// classify works out a live rule's status from its obligation and emits it
// if it changed.
func (r *Run) classify(i int, ev *schema.Event) {
	rs := &r.rules[i]
	o := rs.res
	switch {
	case o == r.e.in.true || o.invariant:
		r.emit(i, stSatisfied, lnNone, ev, nil)
	default:
		ln := lnViolate
		if endValue(o, r.deferred(i)) {
			ln = lnSatisfy
		}
		if rs.status == stPending && rs.leaning == ln {
			return // unchanged: no need to find the cause
		}
		r.emit(i, stPending, ln, ev, openObligation(o).origin)
	}
}

// evalProps computes the rule's propositions at p, then advances the past
// summaries to p.
func (r *Run) evalProps(i int, rs *ruleState, p *trace.Position, first bool, vals []bool) {
	r.computeProps(i, rs, p, first, vals)
	r.advanceProps(i, rs, p, vals)
}

// computeProps computes rule i's propositions at p into vals, changing
// nothing.
func (r *Run) computeProps(i int, rs *ruleState, p *trace.Position, first bool, vals []bool) {
	prog := r.e.progs[i]
	for k := range prog.props {
		pr := &prog.props[k]
		switch pr.kind {
		case propLeaf:
			vals[k] = r.e.leaves.value(pr.leaf, r.e.serial, r.b.T, p)
		case propPast:
			vals[k] = r.pastValue(pr, rs, first)
		case propTarget:
			vals[k] = r.targetValue(pr, rs, p)
		case propChain:
			vals[k] = r.chainValue(pr, rs, p)
		}
	}
}

// advanceProps makes the past summaries of rule i remember p's values for
// the next position.
func (r *Run) advanceProps(i int, rs *ruleState, p *trace.Position, vals []bool) {
	prog := r.e.progs[i]
	for k := range prog.props {
		pr := &prog.props[k]
		switch pr.kind {
		case propPast:
			base := int(rs.pastOff) + pr.slot
			r.setBit(base, vals[k])
			r.setBit(base+1, pr.a.eval(vals))
			if pr.b.op != 0 {
				r.setBit(base+2, pr.b.eval(vals))
			}
		case propTarget:
			recordTarget(prog, pr, rs, p, pr.a.eval(vals))
		case propChain:
			recordChain(prog, pr, rs, p, pr.a.eval(vals))
		}
	}
}

func (r *Run) bit(i int) bool { return r.past[i/64]&(1<<(i%64)) != 0 }

func (r *Run) setBit(i int, v bool) {
	if v {
		r.past[i/64] |= 1 << (i % 64)
	} else {
		r.past[i/64] &^= 1 << (i % 64)
	}
}

// pastValue is the Havelund–Roşu recurrence: the value at this position from
// the operator's value and its arguments' values at the previous one.
func (r *Run) pastValue(pr *prop, rs *ruleState, first bool) bool {
	var op any = pr.op
	if u, ok := op.(*ltl.Unary); ok {
		if first {
			return u.Op == ltl.OpH
		}
		prev, a := r.bit(int(rs.pastOff)+pr.slot), r.bit(int(rs.pastOff)+pr.slot+1)
		if u.Op == ltl.OpP {
			return prev || a
		}
		return prev && a
	}
	if first {
		return false
	}
	prev, a, b := r.bit(int(rs.pastOff)+pr.slot), r.bit(int(rs.pastOff)+pr.slot+1), r.bit(int(rs.pastOff)+pr.slot+2)
	if pr.op.(*ltl.Binary).Op == ltl.OpS {
		return b || (a && prev)
	}
	return !b && (a || prev) // S_last
}

// targetValue: P_target holds when some earlier position sharing a target had
// its argument true; H_target when none sharing a target had it false. The
// per-target map records exactly that.
func (r *Run) targetValue(pr *prop, rs *ruleState, p *trace.Position) bool {
	if rs.extra == nil || rs.extra.targets == nil {
		return !pr.exist
	}
	m := rs.extra.targets[pr.slot]
	for _, t := range p.TargetSet() {
		if m[t] {
			return pr.exist
		}
	}
	return !pr.exist
}

func recordTarget(prog *program, pr *prop, rs *ruleState, p *trace.Position, arg bool) {
	if arg != pr.exist || len(p.TargetSet()) == 0 {
		return // only witnesses are remembered
	}
	x := rs.more()
	if x.targets == nil {
		x.targets = make([]map[string]bool, prog.scoped)
	}
	if x.targets[pr.slot] == nil {
		x.targets[pr.slot] = map[string]bool{}
	}
	for _, t := range p.TargetSet() {
		x.targets[pr.slot][t] = true
	}
}

// chainValue: P_chain holds when some earlier position that produced an
// artifact in p's lineage had its argument true (H_chain: none had it
// false). Each artifact memoises whether its ancestry has such a producer,
// once every producer in its ancestry has been recorded (sealed and
// evaluated); until then — p's own outputs, and what an open position
// produced — nothing is memoised, so a decision taken while a position is
// open leaves no stale memo behind.
func (r *Run) chainValue(pr *prop, rs *ruleState, p *trace.Position) bool {
	var m map[*trace.Artifact]uint8
	if rs.extra != nil && rs.extra.chains != nil {
		m = rs.extra.chains[pr.slot]
	}
	if m == nil {
		return !pr.exist
	}
	var seen map[*trace.Artifact]witness // made only when a walk is needed
	for _, a := range p.Inputs {
		if anyWitness(m, a, &seen).found {
			return pr.exist
		}
	}
	for _, a := range p.Produced {
		if anyWitness(m, a, &seen).found {
			return pr.exist
		}
	}
	return !pr.exist
}

// witness is what anyWitness knows of an artifact: whether its ancestry
// (itself included) has a recorded witness producer, and whether it has a
// producer not recorded yet (so a "no" could still change).
type witness struct{ found, pending bool }

// anyWitness walks a's ancestry once (seen holds what this walk visited) and
// memoises settled answers in m.
func anyWitness(m map[*trace.Artifact]uint8, a *trace.Artifact, seen *map[*trace.Artifact]witness) witness {
	st := m[a]
	if st&chainAny != 0 {
		return witness{found: st&chainAnyVal != 0}
	}
	if *seen == nil {
		*seen = map[*trace.Artifact]witness{}
	}
	if w, ok := (*seen)[a]; ok {
		return w
	}
	(*seen)[a] = witness{} // a cycle in derived_from adds nothing
	w := witness{
		found:   st&chainProd != 0 && st&chainProdVal != 0,
		pending: a.Producer != nil && st&chainProd == 0,
	}
	for _, q := range a.Parents {
		if w.found {
			break
		}
		qw := anyWitness(m, q, seen)
		w.found, w.pending = qw.found, w.pending || qw.pending
	}
	switch {
	case w.found: // a recorded witness stays one
		m[a] = st | chainAny | chainAnyVal
	case !w.pending:
		m[a] = st | chainAny
	}
	(*seen)[a] = w
	return w
}

func recordChain(prog *program, pr *prop, rs *ruleState, p *trace.Position, arg bool) {
	if len(p.Produced) == 0 {
		return
	}
	x := rs.more()
	if x.chains == nil {
		x.chains = make([]map[*trace.Artifact]uint8, prog.scoped)
	}
	if x.chains[pr.slot] == nil {
		x.chains[pr.slot] = map[*trace.Artifact]uint8{}
	}
	m := x.chains[pr.slot]
	witness := arg == pr.exist
	for _, a := range p.Produced {
		st := uint8(chainProd)
		if witness {
			st |= chainProdVal
		}
		m[a] = st // a memo of "no witness" taken while p was open is replaced
	}
}

// deferred returns the value function of rule i's position-independent
// leaves over the run as it stands, memoised until the next event.
func (r *Run) deferred(i int) func(int) bool {
	prog := r.e.progs[i]
	rs := &r.rules[i]
	if r.defStamp != r.b.T.Version {
		r.defStamp = r.b.T.Version
		for j := range r.rules {
			if x := r.rules[j].extra; x != nil {
				clear(x.defVals)
			}
		}
	}
	return func(k int) bool {
		x := rs.more()
		if x.defVals == nil {
			x.defVals = make([]int8, len(prog.deferred))
		}
		if x.defVals[k] == 0 {
			st := eval.State{Trace: r.b.T, Opts: prog.opts}
			x.defVals[k] = 1
			if st.Holds(prog.deferred[k], nil) {
				x.defVals[k] = 2
			}
		}
		return x.defVals[k] == 2
	}
}

// finish resolves every rule at the end of the run. ev is the closing event,
// or nil when the run ended without one.
func (r *Run) finish(ev *schema.Event) {
	r.ended = true
	cause := ev
	if cause == nil {
		cause = r.lastEvent()
	}
	closed := ev != nil && ev.Type == schema.TypeRunFinish
	for i, prog := range r.e.progs {
		rs := &r.rules[i]
		if rs.violated {
			continue
		}
		if prog.capability {
			r.emit(i, stSatisfied, lnNone, cause, nil)
			continue
		}
		if r.positions == 0 {
			r.finishEmpty(i, prog, cause, closed)
			continue
		}
		def := r.deferred(i)
		switch {
		case closed && endValue(rs.res, def):
			r.emit(i, stSatisfied, lnNone, cause, nil)
		case closed:
			rs.violated = true
			r.emit(i, stViolated, lnNone, cause, blameEnd(rs.res, def))
		case rs.res == r.e.in.true || rs.res.invariant:
			r.emit(i, stSatisfied, lnNone, cause, nil)
		default:
			r.emit(i, stUnresolved, lnNone, cause, openObligation(rs.res).origin)
		}
	}
}

// finishEmpty resolves a rule on a run that had no action: the formula is
// evaluated on the empty trace directly.
func (r *Run) finishEmpty(i int, prog *program, cause *schema.Event, closed bool) {
	rs := &r.rules[i]
	holds := eval.HoldsAt(prog.rule.Formula, r.b.T, prog.opts, 0)
	switch {
	case closed && holds:
		r.emit(i, stSatisfied, lnNone, cause, nil)
	case closed:
		rs.violated = true
		r.emit(i, stViolated, lnNone, cause, prog.rule.Formula)
	case prog.init == r.e.in.true || prog.init.invariant:
		r.emit(i, stSatisfied, lnNone, cause, nil)
	default:
		r.emit(i, stUnresolved, lnNone, cause, prog.rule.Formula)
	}
}

// Results returns every rule's final state; call it after the run ended.
func (r *Run) Results() []Result {
	out := make([]Result, len(r.rules))
	for i, prog := range r.e.progs {
		rs := &r.rules[i]
		res := Result{RuleID: prog.rule.ID, Status: statusNames[rs.status], Witness: -1}
		var holds bool
		switch {
		case prog.capability:
			holds = !rs.violated
		case r.positions == 0:
			holds = eval.HoldsAt(prog.rule.Formula, r.b.T, prog.opts, 0)
		default:
			holds = !rs.violated && endValue(rs.res, r.deferred(i))
		}
		if rs.atAction {
			res.Witness = rs.witness
		}
		switch {
		case !holds:
			res.Outcome = eval.Fail
		case len(prog.triggers) > 0 && !rs.triggered, prog.opts.AppliesWhen != nil && !rs.applies,
			prog.capability && !rs.triggered:
			res.Outcome = eval.NotApplicable
		default:
			res.Outcome = eval.Pass
		}
		out[i] = res
	}
	return out
}

// emit appends a verdict if (status, leaning) differs from the last one.
func (r *Run) emit(i int, st status, ln leaning, ev *schema.Event, cause ltl.Node) {
	rs := &r.rules[i]
	if st == rs.status && ln == rs.leaning {
		return
	}
	rs.status, rs.leaning = st, ln
	prog := r.e.progs[i]
	v := schema.VerdictEvent{
		RunID:   r.b.T.RunID,
		Rule:    schema.RuleRef{ID: prog.rule.ID, Description: prog.rule.Description},
		Status:  statusNames[st],
		Leaning: leaningNames[ln],
		Mode:    prog.mode,
	}
	if ev == nil { // a run that ended before any event
		r.e.out, r.e.outAt = append(r.e.out, v), append(r.e.outAt, time.Time{})
		return
	}
	v.Seq = ev.Seq
	if cause != nil || st == stViolated {
		v.Cause = &schema.Cause{Event: *ev, Subformula: prog.subformula(cause)}
	}
	r.e.out, r.e.outAt = append(r.e.out, v), append(r.e.outAt, ev.TS)
}
