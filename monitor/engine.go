package monitor

import (
	"errors"
	"time"

	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// Engine holds a rule set compiled for incremental evaluation, and the
// interned obligations and cached transitions its runs share. An Engine and
// its Runs are owned by one goroutine: they are not safe for concurrent use.
// A sharded worker has one Engine per shard.
type Engine struct {
	set    *ruleset.Set
	progs  []*program
	in     *interner
	leaves *leafTable
	serial uint64                // counts the positions evaluated, for the leaf cache
	cached int                   // transitions cached, over all obligations
	vals   [][]bool              // scratch: proposition values per program
	out    []schema.VerdictEvent // scratch: the verdicts of the event being added
	outAt  []time.Time           // scratch: the ts of the event each verdict of out is on

	keepPositions bool // a rule reads the run's actions or telemetry
	indexOutputs  bool // a rule reads the actions only through their outputs (slim index)
	keepGraph     bool // a scoped or structural rule reads the artifact graph
	keepProducers bool // a rule reads an artifact's producer (the producer field)

	// POLICY.md: the authorization engine over every loaded policy, and
	// the program of each of their rules.
	capEngine *policymd.Engine
	capRules  map[*policymd.Rule]int
	capIDs    map[string]string // POLICY.md rule id → the id of its rule in the set
}

// maxCache bounds the transitions cached; the caches are dropped when full.
const maxCache = 1 << 16

// NewEngine compiles every rule of set. A rule the monitor cannot evaluate
// incrementally is left out and its *CompileError returned; the engine runs
// the others.
func NewEngine(set *ruleset.Set) (*Engine, []error) {
	e := &Engine{set: set, in: newInterner(), leaves: &leafTable{index: map[string]int{}}}
	var errs []error
	for _, r := range set.Rules {
		p, err := compile(e.in, e.leaves, r, set.Options(r), schema.Mode(set.Enforced(r)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p.capability {
			if e.capRules == nil {
				e.capRules, e.capIDs = map[*policymd.Rule]int{}, map[string]string{}
			}
			e.capRules[r.Capability] = len(e.progs)
			e.capIDs[r.Capability.ID] = r.ID
		}
		e.progs = append(e.progs, p)
		e.vals = append(e.vals, make([]bool, len(p.props)))
		switch r.Level {
		case ltl.Structural:
			e.keepGraph = true
			switch actionReads(r.Formula, set.Opts.Predicates) {
			case readsAll:
				e.keepPositions = true
			case readsOutputs:
				e.indexOutputs = true
			}
		case ltl.ScopedTemporal:
			e.keepGraph = true
		}
		if r.Formula != nil {
			graph, producer := readsMatched(r.Formula)
			e.keepGraph = e.keepGraph || graph
			e.keepProducers = e.keepProducers || producer || readsProducer(r.Formula)
		}
	}
	for _, p := range set.Opts.Predicates {
		e.keepProducers = e.keepProducers || readsProducer(p)
	}
	if len(set.Policies) > 0 {
		e.capEngine = policymd.NewEngine(set.Policies)
	}
	return e, errs
}

// readsMatched reports whether f reads names of an artifact a type atom
// matched (T → ψ, T(ψ): ltl.ScopedImplication): its derived_from and what
// it names are in the artifact graph, which a pure-temporal rule set would
// otherwise not keep (graph); and whether one of those names is producer.
func readsMatched(f ltl.Formula) (graph, producer bool) {
	ltl.Walk(f, func(n ltl.Node) bool {
		var body ltl.Formula
		if c, ok := n.(*ltl.TypeCall); ok {
			body = c.Arg
		} else if g, ok := n.(ltl.Formula); ok {
			_, body, _ = ltl.ScopedImplication(g)
		}
		if body != nil {
			ltl.Walk(body, func(m ltl.Node) bool {
				if id, ok := m.(*ltl.Ident); ok {
					graph = true
					producer = producer || id.Name == "producer"
				}
				return true
			})
		}
		return true
	})
	return graph, producer
}

// readsProducer reports whether f reads an artifact's producer (the field
// producer): only then must the artifact graph keep producing actions whole.
func readsProducer(f ltl.Formula) bool {
	found := false
	ltl.Walk(f, func(n ltl.Node) bool {
		if x, ok := n.(*ltl.Field); ok && x.Name == "producer" {
			found = true
		}
		return !found
	})
	return found
}

// How a rule reads the run's actions (ltl.ReadsActions).
const (
	readsNone    = iota
	readsOutputs // only through their outputs (ltl.ReadsActionsByOutputs)
	readsAll
)

// actionReads is how f, with the user predicates it uses, reads the run's
// actions or telemetry.
func actionReads(f ltl.Formula, preds map[string]ltl.Formula) int {
	reads := readsNone
	var visit func(g ltl.Formula, seen map[string]bool)
	visit = func(g ltl.Formula, seen map[string]bool) {
		switch {
		case !ltl.ReadsActions(g):
		case ltl.ReadsActionsByOutputs(g):
			reads = max(reads, readsOutputs)
		default:
			reads = readsAll
		}
		ltl.Walk(g, func(n ltl.Node) bool {
			if a, ok := n.(*ltl.Atom); ok && !seen[a.Name] {
				if p, ok := preds[a.Name]; ok {
					seen[a.Name] = true
					visit(p, seen)
				}
			}
			return true
		})
	}
	visit(f, map[string]bool{})
	return reads
}

// Rule describes a compiled rule for the rule manifest.
type Rule struct {
	ID          string
	Description string
	Mode        schema.Mode // the mode actually enforced
	Text        string      // the printed form
	Formula     ltl.Formula
	Level       ltl.Level
}

// Rules lists the rules the engine evaluates, in order.
func (e *Engine) Rules() []Rule {
	out := make([]Rule, len(e.progs))
	for i, p := range e.progs {
		out[i] = Rule{ID: p.rule.ID, Description: p.rule.Description, Mode: p.mode, Text: p.text, Formula: p.rule.Formula, Level: p.rule.Level}
	}
	return out
}

// transition progresses o with the proposition values vals, through a
// per-obligation cache: a table indexed by the values as a bit set when the
// program has at most tableProps propositions, a map up to 64.
func (e *Engine) transition(p *program, o *ob, vals []bool) *ob {
	if o.kind == kTrue || o.kind == kFalse || len(vals) > 64 {
		return e.in.progress(o, vals)
	}
	var bits uint64
	for i, v := range vals {
		if v {
			bits |= 1 << i
		}
	}
	if len(vals) <= tableProps {
		if o.table == nil {
			o.table = make([]*ob, 1<<len(vals))
		}
		if next := o.table[bits]; next != nil {
			return next
		}
	} else if next, ok := o.next[bits]; ok {
		return next
	}
	next := e.in.progress(o, vals)
	if e.cached >= maxCache {
		for _, x := range e.in.table {
			x.next, x.table = nil, nil
		}
		e.cached = 0
	}
	if len(vals) <= tableProps {
		if o.table == nil {
			o.table = make([]*ob, 1<<len(vals))
		}
		o.table[bits] = next
	} else {
		if o.next == nil {
			o.next = map[uint64]*ob{}
		}
		o.next[bits] = next
	}
	e.cached++
	return next
}

// tableProps is the most propositions a program may have for its
// transitions to be cached in a table rather than a map.
const tableProps = 8

// ErrEnded is returned when an event arrives for a run that has ended.
var ErrEnded = errors.New("run has ended")

// NewRun starts monitoring the run runID.
func (e *Engine) NewRun(runID string) *Run {
	r := &Run{e: e, b: trace.NewBuilder(runID), rules: make([]ruleState, len(e.progs))}
	r.b.SlimStart() // formulas read only its high-stakes paths
	if !e.keepPositions {
		r.b.DropPositions()
		if e.indexOutputs {
			r.b.IndexProducers()
		}
	}
	if !e.keepGraph {
		r.b.DropGraph()
	}
	if !e.keepProducers {
		r.b.SlimProducers()
	}
	words := 0
	for i, p := range e.progs {
		r.rules[i].res = p.init
		r.rules[i].pastOff = int32(words * 64)
		words += (p.pastBits + 63) / 64
	}
	r.past = make([]uint64, words)
	r.b.OnSeal = r.seal
	return r
}
