package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// This file holds an oracle written from the language's definition alone: it
// builds its own model of a run from the events and evaluates leaves and
// temporal operators directly, sharing no evaluation code with policy/eval,
// trace or the monitor (only the syntax tree of policy/ltl). The
// differential test below checks both evaluators against it, so that a leaf
// both of them get wrong in the same way (they share policy/eval's leaves)
// is still caught.

// oArt is an artifact of the oracle's model.
type oArt struct {
	id, typ, name string
	payload       map[string]any
	parents       []*oArt
	producer      *oPos
}

// oPos is a position (an action) of the oracle's model.
type oPos struct {
	act      *schema.Action
	produced []*oArt
	inputs   []*oArt
	started  bool            // run.start had arrived
	pending  map[string]bool // declared outputs not arrived yet
}

// oRun is the oracle's model of a run.
type oRun struct {
	started, ended bool
	highStakes     []string
	pos            []*oPos
	byID, byName   map[string]*oArt
	open           *oPos
}

// newORun folds the events in: a position stays open for the artifacts it
// produces until its declared outputs have all arrived, the next action
// arrives or the run ends; an artifact arriving while a position is open
// belongs to it when it names it as producer or is among its outputs, and
// is context otherwise.
func newORun(events []schema.Event) *oRun {
	r := &oRun{byID: map[string]*oArt{}, byName: map[string]*oArt{}}
	for i := range events {
		ev := &events[i]
		switch ev.Type {
		case schema.TypeRunStart:
			r.started = true
			if ev.Start != nil {
				r.highStakes = ev.Start.HighStakesPaths
			}
		case schema.TypeAction:
			r.open = nil
			a := ev.Action
			p := &oPos{act: a, started: r.started, pending: map[string]bool{}}
			for _, id := range a.Inputs {
				if x := r.lookup(id); x != nil {
					p.inputs = append(p.inputs, x)
				}
			}
			for _, id := range a.Outputs {
				p.pending[id] = true
			}
			r.pos = append(r.pos, p)
			r.open = p
			for j := range a.Artifacts {
				r.artifact(&a.Artifacts[j], true)
			}
			if len(p.pending) == 0 {
				r.open = nil
			}
		case schema.TypeArtifact:
			r.artifact(ev.Artifact, false)
		case schema.TypeResidual:
			r.artifact(ev.Residual, false)
		case schema.TypeRunFinish, schema.TypeRunError, schema.TypeRunCancel:
			r.open, r.ended = nil, true
		}
	}
	return r
}

func (r *oRun) lookup(idOrName string) *oArt {
	if a := r.byID[idOrName]; a != nil {
		return a
	}
	return r.byName[idOrName]
}

func (r *oRun) artifact(s *schema.Artifact, inline bool) {
	a := &oArt{id: s.ID, typ: s.Type, name: s.Name, payload: map[string]any{}}
	_ = jsonUnmarshal(s.Payload, &a.payload)
	for _, id := range s.DerivedFrom {
		if q := r.lookup(id); q != nil {
			a.parents = append(a.parents, q)
		}
	}
	if p := r.open; p != nil {
		names := s.ProducerActionID != nil && *s.ProducerActionID == p.act.ID
		if inline || names || p.pending[s.ID] || p.pending[s.Name] {
			a.producer = p
			p.produced = append(p.produced, a)
			delete(p.pending, s.ID)
			delete(p.pending, s.Name)
			if len(p.pending) == 0 {
				r.open = nil
			}
		}
	}
	r.byID[a.id] = a
	if a.name != "" {
		r.byName[a.name] = a
	}
}

func (a *oArt) status() string {
	s, _ := a.payload["status"].(string)
	return strings.ToLower(s)
}

func (a *oArt) target() string {
	for _, k := range []string{"path", "file", "target"} {
		if s, _ := a.payload[k].(string); s != "" {
			return s
		}
	}
	return a.name
}

// target is the action's own target: its first FileRef evidence, else
// request.path, else the name of its first output artifact.
func (p *oPos) target() string {
	for _, e := range p.act.Evidence {
		if e.Type == "FileRef" && e.Ref != "" {
			return e.Ref
		}
	}
	var req map[string]any
	if jsonUnmarshal(p.act.Request, &req) == nil {
		if s, _ := req["path"].(string); s != "" {
			return s
		}
	}
	if len(p.produced) > 0 {
		return p.produced[0].name
	}
	return ""
}

// lineage is the position's inputs and outputs and all their ancestors.
func (p *oPos) lineage() map[*oArt]bool {
	out := map[*oArt]bool{}
	var visit func(a *oArt)
	visit = func(a *oArt) {
		if !out[a] {
			out[a] = true
			for _, q := range a.parents {
				visit(q)
			}
		}
	}
	for _, a := range p.inputs {
		visit(a)
	}
	for _, a := range p.produced {
		visit(a)
	}
	return out
}

// targets is the set P_target and H_target compare: the own target, and the
// target and name of every artifact in the lineage and the own target of the
// action that produced it.
func (p *oPos) targets() map[string]bool {
	out := map[string]bool{p.target(): true}
	for a := range p.lineage() {
		out[a.target()], out[a.name] = true, true
		if a.producer != nil {
			out[a.producer.target()] = true
		}
	}
	delete(out, "")
	return out
}

// oracle evaluates one formula over one run model.
type oracle struct {
	run      *oRun
	runLevel map[ltl.Formula]bool
	memo     map[ltl.Formula]map[int]bool
}

func newOracle(run *oRun, root ltl.Formula) *oracle {
	o := &oracle{run: run, runLevel: map[ltl.Formula]bool{}, memo: map[ltl.Formula]map[int]bool{}}
	o.markRunLevel(root, false)
	return o
}

// markRunLevel finds the leaves read over the whole run: end_event
// anywhere, and outside every temporal operator a leaf that reads no atom of
// its position (counts, start_event, constants).
func (o *oracle) markRunLevel(f ltl.Formula, temporal bool) {
	if _, _, ok := oScoped(f); ok {
		return
	}
	switch f := f.(type) {
	case *ltl.Unary:
		o.markRunLevel(f.X, temporal || f.Op != ltl.OpNot)
	case *ltl.Binary:
		t := temporal || f.Op == ltl.OpU || f.Op == ltl.OpS || f.Op == ltl.OpSLast
		o.markRunLevel(f.L, t)
		o.markRunLevel(f.R, t)
	default:
		if a, ok := f.(*ltl.Atom); ok && a.Name == "end_event" {
			o.runLevel[f] = true
		} else if !temporal && oIndependent(f) {
			o.runLevel[f] = true
		}
	}
}

// oIndependent: the leaf reads nothing of its position.
func oIndependent(f ltl.Formula) bool {
	switch f := f.(type) {
	case *ltl.Bool:
		return true
	case *ltl.Atom:
		return f.Name == "start_event" || f.Name == "end_event"
	case *ltl.Compare:
		_, isCount := f.L.(*ltl.Count)
		return isCount
	}
	return false
}

// oScoped recognises T → ψ, T a type name, ψ without temporal operators,
// start_event or end_event: ψ is read of each thing T matched.
func oScoped(f ltl.Formula) (string, ltl.Formula, bool) {
	b, ok := f.(*ltl.Binary)
	if !ok || b.Op != ltl.OpImplies {
		return "", nil, false
	}
	a, ok := b.L.(*ltl.Atom)
	if !ok || a.Name == "" || a.Name[0] < 'A' || a.Name[0] > 'Z' {
		return "", nil, false
	}
	state := true
	ltl.Walk(b.R, func(n ltl.Node) bool {
		switch n := n.(type) {
		case *ltl.Unary:
			state = state && n.Op == ltl.OpNot
		case *ltl.Binary:
			state = state && n.Op != ltl.OpU && n.Op != ltl.OpS && n.Op != ltl.OpSLast
		case *ltl.Atom:
			state = state && n.Name != "start_event" && n.Name != "end_event"
		}
		return state
	})
	return a.Name, b.R, state
}

// at is the value of f at position i (0 ≤ i < number of positions).
func (o *oracle) at(f ltl.Formula, i int) bool {
	m := o.memo[f]
	if m == nil {
		m = map[int]bool{}
		o.memo[f] = m
	}
	if v, ok := m[i]; ok {
		return v
	}
	v := o.compute(f, i)
	m[i] = v
	return v
}

func (o *oracle) compute(f ltl.Formula, i int) bool {
	n := len(o.run.pos)
	if _, _, ok := oScoped(f); ok {
		return o.state(f, i, i+1, nil)
	}
	switch f := f.(type) {
	case *ltl.Unary:
		switch f.Op {
		case ltl.OpNot:
			return !o.at(f.X, i)
		case ltl.OpX:
			return i+1 < n && o.at(f.X, i+1)
		}
		all, exists, scope := f.Op == ltl.OpG || f.Op == ltl.OpH || f.Op == ltl.OpHTarget || f.Op == ltl.OpHChain, false, o.scopeOf(f.Op, i)
		lo, hi := 0, i // past: j < i
		if f.Op == ltl.OpG || f.Op == ltl.OpF {
			lo, hi = i, n
		}
		for j := lo; j < hi; j++ {
			if scope != nil && !scope(j) {
				continue
			}
			if o.at(f.X, j) {
				exists = true
			} else if all {
				return false
			}
		}
		if all {
			return true
		}
		return exists
	case *ltl.Binary:
		switch f.Op {
		case ltl.OpAnd:
			return o.at(f.L, i) && o.at(f.R, i)
		case ltl.OpOr:
			return o.at(f.L, i) || o.at(f.R, i)
		case ltl.OpImplies:
			return !o.at(f.L, i) || o.at(f.R, i)
		case ltl.OpU: // ψ at some k ≥ i, φ on [i, k)
			for k := i; k < n; k++ {
				if o.at(f.R, k) {
					return true
				}
				if !o.at(f.L, k) {
					return false
				}
			}
			return false
		case ltl.OpS: // ψ at some j < i, φ on (j, i)
			for j := 0; j < i; j++ {
				if !o.at(f.R, j) {
					continue
				}
				ok := true
				for k := j + 1; k < i; k++ {
					ok = ok && o.at(f.L, k)
				}
				if ok {
					return true
				}
			}
			return false
		case ltl.OpSLast: // φ somewhere after the last ψ before i, and before i
			last := -1
			for j := 0; j < i; j++ {
				if o.at(f.R, j) {
					last = j
				}
			}
			for k := last + 1; k < i; k++ {
				if o.at(f.L, k) {
					return true
				}
			}
			return false
		}
	}
	view := i + 1
	if o.runLevel[f] {
		view = n
	}
	return o.state(f, i, view, nil)
}

// scopeOf returns which earlier positions a scoped operator at i looks at,
// or nil for the unscoped ones.
func (o *oracle) scopeOf(op ltl.UnaryOp, i int) func(j int) bool {
	switch op {
	case ltl.OpPTarget, ltl.OpHTarget:
		mine := o.run.pos[i].targets()
		return func(j int) bool {
			for t := range o.run.pos[j].targets() {
				if mine[t] {
					return true
				}
			}
			return false
		}
	case ltl.OpPChain, ltl.OpHChain:
		lin := o.run.pos[i].lineage()
		return func(j int) bool {
			for a := range lin {
				if a.producer == o.run.pos[j] {
					return true
				}
			}
			return false
		}
	}
	return nil
}

var oSynonyms = map[string]string{"DefineVerificationGoal": "DefineVG", "StateSpaceAnalysis": "Decompose",
	"StateSpaceAnalysisResult": "Decomposition", "FormalModel": "IMLModel"}

func oSameType(a, b string) bool {
	if s, ok := oSynonyms[a]; ok {
		a = s
	}
	if s, ok := oSynonyms[b]; ok {
		b = s
	}
	return a == b
}

var oStrengths = []string{"proof", "sat", "tests", "static_analysis", "attested"}

func oRank(s string) int {
	for i, x := range oStrengths {
		if x == s {
			return i
		}
	}
	return -1
}

// state evaluates a state formula at position i over the first view
// positions; subj is the artifact a type call or scoped implication matched.
func (o *oracle) state(f ltl.Formula, i, view int, subj *oArt) bool {
	p := o.run.pos[i]
	switch f := f.(type) {
	case *ltl.Bool:
		return f.Value
	case *ltl.Unary: // only ¬ in a state formula
		return !o.state(f.X, i, view, subj)
	case *ltl.Binary:
		if typ, body, ok := oScoped(f); ok {
			if oSameType(p.act.Type, typ) && !o.state(body, i, view, nil) {
				return false
			}
			for _, a := range p.produced {
				if oSameType(a.typ, typ) && !o.state(body, i, view, a) {
					return false
				}
			}
			return true
		}
		l, r := o.state(f.L, i, view, subj), o.state(f.R, i, view, subj)
		switch f.Op {
		case ltl.OpAnd:
			return l && r
		case ltl.OpOr:
			return l || r
		}
		return !l || r
	case *ltl.TypeCall:
		if oSameType(p.act.Type, f.Type) && o.state(f.Arg, i, view, nil) {
			return true
		}
		for _, a := range p.produced {
			if oSameType(a.typ, f.Type) && o.state(f.Arg, i, view, a) {
				return true
			}
		}
		return false
	case *ltl.Attribution: // strength_at_least only
		want := oRank(strings.TrimSpace(f.Arg))
		for _, a := range p.produced {
			or, _ := a.payload["oracle"].(map[string]any)
			s, _ := or["evidence_strength"].(string)
			if r := oRank(s); r >= 0 && r <= want {
				return true
			}
		}
		return false
	case *ltl.Compare:
		if c, ok := f.L.(*ltl.Count); ok { // count(φ) op k over the visible positions
			k := f.R.(*ltl.Num).Value
			cnt := 0.0
			for j := 0; j < view; j++ {
				if o.state(c.X, j, view, nil) {
					cnt++
				}
			}
			switch f.Op {
			case ltl.CmpEq:
				return cnt == k
			case ltl.CmpNeq:
				return cnt != k
			case ltl.CmpLt:
				return cnt < k
			case ltl.CmpLe:
				return cnt <= k
			case ltl.CmpGt:
				return cnt > k
			}
			return cnt >= k
		}
		return p.act.Rationale != "" // rationale ≠ ∅
	case *ltl.Atom:
		return o.atom(f.Name, p, i, view, subj)
	}
	panic(fmt.Sprintf("oracle: no leaf %s", ltl.Print(f)))
}

func (o *oracle) atom(name string, p *oPos, i, view int, subj *oArt) bool {
	if name[0] >= 'A' && name[0] <= 'Z' {
		if oSameType(p.act.Type, name) {
			return true
		}
		for _, a := range p.produced {
			if oSameType(a.typ, name) {
				return true
			}
		}
		return false
	}
	switch name {
	case "start_event":
		return p.started || view == len(o.run.pos) && o.run.started
	case "end_event":
		return o.run.ended
	case "action":
		return true
	case "gateway", "reasoning", "activity", "governance":
		return p.act.Category == name
	case "completed", "failed":
		if subj != nil {
			return subj.status() == name
		}
		return p.act.Status == name
	case "proved", "refuted", "sat", "unknown", "bounded", "passed", "partial", "matched", "mismatched":
		if subj != nil {
			return subj.status() == name
		}
		for _, a := range p.produced {
			if a.status() == name {
				return true
			}
		}
		return false
	case "high_stakes_path":
		t := p.target()
		for _, pat := range o.run.highStakes {
			if ok, _ := path.Match(pat, t); t != "" && pat != "" && (strings.Contains(t, pat) || ok) {
				return true
			}
		}
		return false
	case "deploy": // an unknown lowercase atom: the word in the action's texts
		a := p.act
		for _, s := range []string{a.Type, a.Label, a.Detail, a.Rationale, a.ResultSummary} {
			if strings.Contains(strings.ToLower(s), name) {
				return true
			}
		}
		return false
	}
	panic("oracle: no atom " + name)
}

// The oracle's formulas: leaves it implements, under every operator.
var (
	oAtoms = []string{"EditFile", "ReadFile", "GitCommit", "RunTests", "Verify", "Deploy", "completed", "failed",
		"gateway", "reasoning", "activity", "high_stakes_path", "VerificationResult", "Decomposition",
		"StateSpaceAnalysisResult", "IMLModel", "proved", "refuted", "sat", "action", "deploy", "start_event", "end_event"}
	oLeaves = []string{"rationale ≠ ∅", "VerificationResult(proved ∨ sat)", "strength_at_least(tests)",
		"strength_at_least(proof)", "VerificationResult → proved", "IMLModel → completed ∨ refuted",
		"EditFile → rationale ≠ ∅", "Decomposition(¬unknown)"}
)

func oFormula(r *rand.Rand, depth int, inPast bool) ltl.Formula {
	if depth <= 0 || r.IntN(4) == 0 {
		switch r.IntN(10) {
		case 0:
			return ltl.MustParse(oLeaves[r.IntN(len(oLeaves))])
		case 1:
			ops := []string{"≥", "≤", "=", ">", "<", "≠"}
			return ltl.MustParse(fmt.Sprintf("count(%s) %s %d", oAtoms[r.IntN(8)], ops[r.IntN(len(ops))], r.IntN(4)))
		case 2:
			return &ltl.Bool{Value: r.IntN(2) == 0}
		}
		name := oAtoms[r.IntN(len(oAtoms))]
		if inPast && name == "end_event" {
			name = "action"
		}
		return &ltl.Atom{Name: name}
	}
	switch k := r.IntN(17); {
	case k < 3: // boolean
		ops := []ltl.BinaryOp{ltl.OpAnd, ltl.OpOr, ltl.OpImplies}
		return &ltl.Binary{Op: ops[k], L: oFormula(r, depth-1, inPast), R: oFormula(r, depth-1, inPast)}
	case k == 3:
		return &ltl.Unary{Op: ltl.OpNot, X: oFormula(r, depth-1, inPast)}
	case k == 4: // T → ψ with ψ a state formula
		t := []string{"EditFile", "VerificationResult", "IMLModel", "Decomposition"}[r.IntN(4)]
		return &ltl.Binary{Op: ltl.OpImplies, L: &ltl.Atom{Name: t}, R: oFormula(r, 1, true)}
	case k < 9 && !inPast: // future
		if k == 8 {
			return &ltl.Binary{Op: ltl.OpU, L: oFormula(r, depth-1, false), R: oFormula(r, depth-1, false)}
		}
		ops := []ltl.UnaryOp{ltl.OpG, ltl.OpF, ltl.OpX, ltl.OpG}
		return &ltl.Unary{Op: ops[k-5], X: oFormula(r, depth-1, false)}
	case k >= 13:
		return &ltl.Binary{Op: []ltl.BinaryOp{ltl.OpS, ltl.OpSLast}[k%2], L: oFormula(r, depth-1, true), R: oFormula(r, depth-1, true)}
	}
	ops := []ltl.UnaryOp{ltl.OpP, ltl.OpH, ltl.OpPTarget, ltl.OpHTarget, ltl.OpPChain, ltl.OpHChain}
	return &ltl.Unary{Op: ops[r.IntN(len(ops))], X: oFormula(r, depth-1, true)}
}

// TestOracleDifferential checks the incremental monitor and the reference
// evaluator against the oracle on random formulas (every operator, the
// oracle's leaves, scoped implications) and random runs: at every prefix at
// which no position is open, the monitor's folded status (its leaning when
// pending) and the reference result must equal the oracle's value at the
// first position; on the whole run, the reference value of the formula and
// of each of its subformulas at every position must equal the oracle's.
func TestOracleDifferential(t *testing.T) {
	seed := diffSeedValue()
	cases := diffCaseCount()
	t.Logf("oracle differential: %d cases, seed %d (rerun with -diff.seed=%d)", cases, seed, seed)
	r := rand.New(rand.NewPCG(seed, 11))
	for c := range cases {
		f := ltl.MustParse(ltl.Print(oFormula(r, 4, false)))
		events := gen.Run(r, fmt.Sprintf("run-%d", c), gen.RunConfig{MaxActions: 7})
		if msg := oracleOne(f, events); msg != "" {
			t.Fatalf("case %d (seed %d, rerun with -diff.seed=%d): %s\nformula: %s\nevents:\n%s", c, seed, seed, msg, ltl.Print(f), dump(events))
		}
	}
}

// oracleOne runs one case and describes the first disagreement ("" if none).
func oracleOne(f ltl.Formula, events []schema.Event) string {
	rule, probs := ruleset.FromFormula("r", ltl.Print(f))
	if probs != nil {
		return "generated formula does not load: " + probs.Error()
	}
	eng, errs := NewEngine(&ruleset.Set{Rules: []*ruleset.Rule{rule}})
	if len(errs) > 0 {
		return "does not compile: " + errs[0].Error()
	}
	run := eng.NewRun("r")
	status, leaning := schema.StatusSatisfied, schema.Leaning("")
	for i := range events {
		vs, err := run.Add(&events[i])
		if err != nil {
			return err.Error()
		}
		for _, v := range vs {
			status, leaning = v.Status, v.Leaning
		}
		if run.b.Open() || run.Ended() {
			continue
		}
		model := newORun(events[:i+1])
		if len(model.pos) == 0 {
			continue
		}
		want := newOracle(model, f).at(f, 0)
		mon := status == schema.StatusSatisfied || status == schema.StatusPending && leaning == schema.LeaningSatisfy
		if mon != want {
			return fmt.Sprintf("after event %d: monitor says %s/%s, oracle says %v", events[i].Seq, status, leaning, want)
		}
		if ref := eval.Evaluate(f, trace.Build("r", events[:i+1]), nil).Outcome != eval.Fail; ref != want {
			return fmt.Sprintf("after event %d: reference says %v, oracle says %v", events[i].Seq, ref, want)
		}
	}
	if !run.Ended() {
		for _, v := range run.End() {
			status, leaning = v.Status, v.Leaning
		}
	}
	model := newORun(events)
	if len(model.pos) == 0 {
		return ""
	}
	want := newOracle(model, f).at(f, 0)
	if got := run.Results()[0].Outcome != eval.Fail; got != want {
		return fmt.Sprintf("at the end: monitor says %s, oracle says %v", run.Results()[0].Outcome, want)
	}
	whole := trace.Build("r", events)
	var bad string
	ltl.Walk(f, func(n ltl.Node) bool {
		g, ok := n.(ltl.Formula)
		if !ok || bad != "" {
			return false
		}
		o := newOracle(model, g)
		for i := range model.pos {
			if got, want := eval.HoldsAt(g, whole, nil, i), o.at(g, i); got != want {
				bad = fmt.Sprintf("whole run: reference says %s is %v at position %d, oracle says %v", ltl.Print(g), got, i, want)
				return false
			}
		}
		if _, _, scoped := oScoped(g); scoped {
			return false // its parts are not formulas of their own there
		}
		switch g.(type) {
		case *ltl.Unary, *ltl.Binary:
			return true
		}
		return false
	})
	return bad
}

func jsonUnmarshal(data []byte, v any) error {
	if len(data) == 0 {
		return errors.New("absent")
	}
	return json.Unmarshal(data, v)
}
