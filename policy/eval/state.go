package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/trace"
)

// Options configure how atoms are read. The zero value is ready to use.
type Options struct {
	// HighStakesPaths are path fragments or glob patterns added to the
	// trace's own high_stakes_paths.
	HighStakesPaths []string
	// Predicates are user-defined atoms: a lowercase name and the state
	// formula (no temporal operators) it stands for.
	Predicates map[string]ltl.Formula
	// Reasoner, when set, restricts evidence to artifacts whose oracle has
	// that engine, oracle type or id: artifacts of other provenance do not
	// make type, status or attribution atoms true (a gallery policy's
	// reasoner field).
	Reasoner string
	// AppliesWhen, when set, makes a rule not_applicable on a trace none of
	// whose actions it matches (a policy object's applies_when).
	AppliesWhen *Selector
}

// Selector matches actions: every non-empty field must match.
type Selector struct {
	ActionType   string `yaml:"action_type" json:"action_type,omitempty"`
	ArtifactType string `yaml:"artifact_type" json:"artifact_type,omitempty"`
	Category     string `yaml:"category" json:"category,omitempty"`
	PathPattern  string `yaml:"path_pattern" json:"path_pattern,omitempty"`
}

// Matches reports whether the action at p matches the selector: its type, the
// type of an artifact it produced, its category, and its target (a glob, or a
// fragment the target contains).
func (sel *Selector) Matches(p *trace.Position) bool {
	if p == nil {
		return false
	}
	if sel.ActionType != "" && !sameType(p.Action.Type, sel.ActionType) {
		return false
	}
	if sel.Category != "" && p.Action.Category != sel.Category {
		return false
	}
	if sel.ArtifactType != "" {
		hit := false
		for _, a := range p.Produced {
			hit = hit || sameType(a.Type, sel.ArtifactType)
		}
		if !hit {
			return false
		}
	}
	if sel.PathPattern != "" {
		t := p.Target()
		if ok, _ := path.Match(sel.PathPattern, t); !ok && !strings.Contains(t, sel.PathPattern) {
			return false
		}
	}
	return true
}

// evidence returns the artifacts p produced that count as evidence under the
// reasoner restriction.
func (s *State) evidence(p *trace.Position) []*trace.Artifact {
	if s.Opts.Reasoner == "" {
		return p.Produced
	}
	var out []*trace.Artifact
	for _, a := range p.Produced {
		oracle, _ := a.Payload()["oracle"].(map[string]any)
		for _, k := range []string{"engine", "oracle_type", "id"} {
			if strings.EqualFold(str(oracle[k]), s.Opts.Reasoner) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// State evaluates formulas that have no temporal operator at one position of
// a trace: atoms, comparisons, quantifiers, sets. Collections (actions,
// artifacts, residuals, telemetry, count) read the whole of Trace. Both the
// reference evaluator and the incremental monitor use it, so an atom means
// the same thing to both.
type State struct {
	Trace *trace.Trace
	Opts  *Options
}

// bindings is a quantifier environment: a linked list, innermost first.
type bindings struct {
	name string
	val  any
	next *bindings
}

func (b *bindings) lookup(name string) (any, bool) {
	for ; b != nil; b = b.next {
		if b.name == name {
			return b.val, true
		}
	}
	return nil, false
}

// symbol is a CamelCase constant in term position (Critical, IMLModel). It
// equals a string case-insensitively.
type symbol string

// subject is what status atoms read inside a type call T(φ): the action, or
// an artifact of type T that it produced.
type subject struct {
	pos      *trace.Position
	artifact *trace.Artifact
}

// Holds evaluates the state formula f at position p (nil for the empty
// trace). It panics on a temporal operator: callers pass only formulas that
// ltl.Check accepted in a state position.
func (s *State) Holds(f ltl.Formula, p *trace.Position) bool {
	return s.holds(f, p, nil, nil)
}

func (s *State) holds(f ltl.Formula, p *trace.Position, env *bindings, subj *subject) bool {
	switch f := f.(type) {
	case *ltl.Bool:
		return f.Value
	case *ltl.Atom:
		return s.atom(f.Name, p, subj)
	case *ltl.TypeCall:
		if p == nil {
			return false
		}
		if sameType(p.Action.Type, f.Type) && s.holds(f.Arg, p, env, &subject{pos: p}) {
			return true
		}
		for _, a := range s.evidence(p) {
			if sameType(a.Type, f.Type) && s.holds(f.Arg, p, withSubject(env, a), &subject{pos: p, artifact: a}) {
				return true
			}
		}
		return false
	case *ltl.Attribution:
		if p == nil {
			return false
		}
		if f.Func == "ref_model" {
			return refModel(s.Trace, p, ltl.AttributionArg(f))
		}
		return attribution(f, s.evidence(p))
	case *ltl.Unary:
		if f.Op != ltl.OpNot {
			panic(fmt.Sprintf("eval: temporal operator %s in a state formula", f.Op))
		}
		return !s.holds(f.X, p, env, subj)
	case *ltl.Binary:
		if typ, body, ok := ltl.ScopedImplication(f); ok {
			return s.scoped(typ, body, p, env)
		}
		switch f.Op {
		case ltl.OpAnd:
			return s.holds(f.L, p, env, subj) && s.holds(f.R, p, env, subj)
		case ltl.OpOr:
			return s.holds(f.L, p, env, subj) || s.holds(f.R, p, env, subj)
		case ltl.OpImplies:
			return !s.holds(f.L, p, env, subj) || s.holds(f.R, p, env, subj)
		}
		panic(fmt.Sprintf("eval: temporal operator %s in a state formula", f.Op))
	case *ltl.Quantified:
		var dom []any
		if f.Domain == nil {
			if cand, ok := s.outputCandidates(f, p, env); ok {
				dom = cand
			} else {
				dom = s.collection("actions")
			}
		} else {
			dom = asList(s.term(f.Domain, p, env))
		}
		n := 0
		for _, x := range dom {
			if s.holds(f.Body, p, &bindings{f.Var, x, env}, subj) {
				n++
				if f.Q == ltl.Exists {
					return true
				}
			} else if f.Q == ltl.Forall {
				return false
			}
			if f.Q == ltl.Unique && n > 1 {
				return false
			}
		}
		switch f.Q {
		case ltl.Forall:
			return true
		case ltl.Exists:
			return false
		}
		return n == 1
	case *ltl.Compare:
		l, r := s.operand(f.L, f.R, p, env), s.operand(f.R, f.L, p, env)
		if _, ok := f.R.(*ltl.EmptySet); ok {
			return (f.Op == ltl.CmpEq) == isEmpty(l)
		}
		if _, ok := f.L.(*ltl.EmptySet); ok {
			return (f.Op == ltl.CmpEq) == isEmpty(r)
		}
		switch f.Op {
		case ltl.CmpEq:
			return equal(l, r)
		case ltl.CmpNeq:
			return !equal(l, r)
		}
		c, ok := compare(l, r)
		if !ok {
			return false
		}
		switch f.Op {
		case ltl.CmpLt:
			return c < 0
		case ltl.CmpLe:
			return c <= 0
		case ltl.CmpGt:
			return c > 0
		}
		return c >= 0
	case *ltl.Member:
		elem := s.operand(f.Elem, f.Set, p, env)
		typ := typeConstant(f, env)
		in := false
		for _, x := range asList(s.operand(f.Set, f.Elem, p, env)) {
			if a, ok := x.(*trace.Artifact); ok && typ != "" && sameType(a.Type, typ) || equal(elem, x) {
				in = true
				break
			}
		}
		return in != f.Negated
	}
	panic(fmt.Sprintf("eval: unknown formula %T", f))
}

// typeConstant returns the type T of a membership test T ∈ S written with a
// type name that nothing binds: it holds when some member of S is an
// artifact of type T (up to synonyms), or equals T. In outputs(x), which the
// output index serves, T names an output id only.
func typeConstant(m *ltl.Member, env *bindings) string {
	id, ok := m.Elem.(*ltl.Ident)
	if !ok || !isTypeName(id.Name) {
		return ""
	}
	if _, bound := env.lookup(id.Name); bound {
		return ""
	}
	if c, ok := m.Set.(*ltl.Call); ok && c.Func == "outputs" {
		return ""
	}
	return id.Name
}

// scoped evaluates T → ψ read of each thing T matched at p
// (ltl.ScopedImplication): the action when its type is T, and each artifact
// of type T it produced, whose fields ψ's bare names read first. With no
// match the implication holds.
func (s *State) scoped(typ string, body ltl.Formula, p *trace.Position, env *bindings) bool {
	if p == nil {
		return true
	}
	if sameType(p.Action.Type, typ) && !s.holds(body, p, env, &subject{pos: p}) {
		return false
	}
	for _, a := range s.evidence(p) {
		if sameType(a.Type, typ) && !s.holds(body, p, withSubject(env, a), &subject{pos: p, artifact: a}) {
			return false
		}
	}
	return true
}

// subjectName binds the artifact a type atom matched in the environment
// (ltl.ScopedImplication, T(ψ)); no variable can have this name.
const subjectName = ""

func withSubject(env *bindings, a *trace.Artifact) *bindings {
	return &bindings{subjectName, a, env}
}

// operand evaluates t, one side of =, ≠ or ∈ whose other side is other: a
// lowercase name there that nothing binds, compared with a field of a bound
// variable, is a string constant (ltl.StringConstant), compared
// case-insensitively.
func (s *State) operand(t, other ltl.Term, p *trace.Position, env *bindings) any {
	bound := func(name string) bool { _, ok := env.lookup(name); return ok }
	if ltl.StringConstant(t, other, bound) {
		return symbol(t.(*ltl.Ident).Name)
	}
	return s.term(t, p, env)
}

// Atom sets of SEMANTICS.md §2.
var (
	categories     = map[string]bool{"gateway": true, "reasoning": true, "activity": true, "governance": true}
	actionStatuses = map[string]bool{"completed": true, "failed": true}
	resultStatuses = map[string]bool{"proved": true, "refuted": true, "sat": true, "unknown": true, "bounded": true,
		"passed": true, "partial": true, "matched": true, "mismatched": true}
)

// CanonicalType returns the canonical spelling of an action or artifact type:
// the older names of SEMANTICS.md §1 map to the current ones.
func CanonicalType(t string) string {
	switch t {
	case "DefineVerificationGoal":
		return "DefineVG"
	case "StateSpaceAnalysis":
		return "Decompose"
	case "StateSpaceAnalysisResult":
		return "Decomposition"
	case "FormalModel":
		return "IMLModel"
	}
	return t
}

func sameType(a, b string) bool { return a == b || CanonicalType(a) == CanonicalType(b) }

func (s *State) atom(name string, p *trace.Position, subj *subject) bool {
	return atomFunc(name, s.Opts)(s, p, subj)
}

// atomFn is an atom compiled once: what atom means, without dispatching on
// its name at every position.
type atomFn func(s *State, p *trace.Position, subj *subject) bool

// atomFunc compiles the atom name (SEMANTICS.md §2). The reference evaluator
// compiles at every use; the monitor once per rule (CompileLeaf).
func atomFunc(name string, opts *Options) atomFn {
	if isTypeName(name) {
		canon := CanonicalType(name)
		return func(s *State, p *trace.Position, _ *subject) bool {
			if p == nil {
				return false
			}
			if CanonicalType(p.Action.Type) == canon {
				return true
			}
			for _, a := range s.evidence(p) {
				if CanonicalType(a.Type) == canon {
					return true
				}
			}
			return false
		}
	}
	switch name {
	case "start_event":
		return func(s *State, _ *trace.Position, _ *subject) bool { return s.Trace.Start != nil }
	case "end_event":
		return func(s *State, _ *trace.Position, _ *subject) bool { return s.Trace.End != nil }
	}
	if pred, ok := opts.Predicates[name]; ok {
		return func(s *State, p *trace.Position, subj *subject) bool { return s.holds(pred, p, nil, subj) }
	}
	var base func(s *State, p *trace.Position) bool
	switch {
	case name == "action":
		base = func(*State, *trace.Position) bool { return true }
	case categories[name]:
		base = func(_ *State, p *trace.Position) bool { return p.Action.Category == name }
	case actionStatuses[name]:
		base = func(_ *State, p *trace.Position) bool { return p.Action.Status == name }
	case resultStatuses[name]:
		base = func(s *State, p *trace.Position) bool {
			for _, a := range s.evidence(p) {
				if a.Status() == name {
					return true
				}
			}
			return false
		}
	case name == "high_stakes_path":
		base = func(s *State, p *trace.Position) bool { return s.highStakes(p.Target()) }
	default:
		spaced := strings.ToLower(strings.ReplaceAll(name, "_", " "))
		joined := strings.ToLower(strings.ReplaceAll(name, "_", ""))
		base = func(_ *State, p *trace.Position) bool { return mentions(p, name, spaced, joined) }
	}
	readsStatus := resultStatuses[name] || actionStatuses[name] || name == "error"
	return func(s *State, p *trace.Position, subj *subject) bool {
		if p == nil {
			return false
		}
		if readsStatus && subj != nil && subj.artifact != nil {
			return subj.artifact.Status() == name
		}
		return base(s, p)
	}
}

// Leaf is a state leaf compiled for repeated evaluation, with exactly the
// meaning State.Holds gives it. The monitor compiles each leaf of a rule once.
type Leaf func(s *State, p *trace.Position) bool

// CompileLeaf compiles a state leaf (a formula without temporal operators).
func CompileLeaf(f ltl.Formula, opts *Options) Leaf {
	if a, ok := f.(*ltl.Atom); ok {
		fn := atomFunc(a.Name, opts)
		return func(s *State, p *trace.Position) bool { return fn(s, p, nil) }
	}
	return func(s *State, p *trace.Position) bool { return s.holds(f, p, nil, nil) }
}

func (s *State) highStakes(target string) bool {
	if target == "" {
		return false
	}
	for _, list := range [][]string{s.Trace.HighStakesPaths(), s.Opts.HighStakesPaths} {
		for _, pat := range list {
			if pat == "" {
				continue
			}
			if strings.Contains(target, pat) {
				return true
			}
			if strings.ContainsAny(pat, "*?[\\") {
				if ok, _ := path.Match(pat, target); ok {
					return true
				}
			}
		}
	}
	return false
}

// mentions is the reference behaviour for an unknown lowercase atom: the name,
// underscores read as spaces (spaced), occurs case-insensitively in the
// action's type, label, detail, rationale or result_summary, or in its flags
// or labels; or the name without underscores (joined) in its type; or the
// name as it is among its flags or labels.
func mentions(p *trace.Position, name, spaced, joined string) bool {
	a := p.Action
	if strings.Contains(strings.ToLower(a.Type), joined) {
		return true
	}
	for _, text := range []string{a.Type, a.Label, a.Detail, a.Rationale, a.ResultSummary} {
		if strings.Contains(strings.ToLower(text), spaced) {
			return true
		}
	}
	for _, key := range []string{"flags", "labels"} {
		for _, v := range asList(p.Field(key)) {
			if str, ok := v.(string); ok && (strings.EqualFold(str, name) || strings.Contains(strings.ToLower(str), spaced)) {
				return true
			}
		}
	}
	return false
}

// strengthRank returns the rank of an evidence strength (0 strongest) or -1
// when unranked.
func strengthRank(s string) int {
	for i, x := range ltl.Strengths {
		if x == s {
			return i
		}
	}
	return -1
}

func attribution(f *ltl.Attribution, produced []*trace.Artifact) bool {
	arg := ltl.AttributionArg(f)
	for _, a := range produced {
		pl := a.Payload()
		oracle, _ := pl["oracle"].(map[string]any)
		switch f.Func {
		case "strength_at_least":
			got := strengthRank(str(oracle["evidence_strength"]))
			if got >= 0 && got <= strengthRank(arg) {
				return true
			}
		case "oracle_type":
			if str(oracle["oracle_type"]) == arg {
				return true
			}
			for _, sp := range asList(oracle["specializes"]) {
				if str(sp) == arg {
					return true
				}
			}
		case "produced_by":
			if str(oracle["id"]) == arg {
				return true
			}
		case "conforms_to":
			if !sameType(a.Type, "ConformanceResult") {
				continue
			}
			for _, k := range []string{"reference", "reference_artifact_id", "reference_id", "ref"} {
				if refMatches(str(pl[k]), arg) {
					return true
				}
			}
		}
	}
	return false
}

// refModel is ref_model(id): the action's request names reference model id
// (request.reference_model_id), or the trace declares it (a policies or
// reference_models entry with that id).
func refModel(t *trace.Trace, p *trace.Position, id string) bool {
	id = strings.Trim(id, `"'`)
	if req, ok := p.Field("request").(map[string]any); ok && str(req["reference_model_id"]) == id {
		return true
	}
	return t.DeclaresModel(id)
}

// refMatches reports whether the reference ref satisfies want: equal, or want
// is unversioned (no '@') and names ref's id at any version.
func refMatches(ref, want string) bool {
	if ref == "" {
		return false
	}
	if ref == want {
		return true
	}
	if !strings.Contains(want, "@") {
		id, _, _ := strings.Cut(ref, "@")
		return id == want
	}
	return false
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func isTypeName(name string) bool {
	return name != "" && name[0] >= 'A' && name[0] <= 'Z'
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case symbol:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// severities orders residual severities (SEMANTICS.md §1), compared
// case-insensitively.
var severities = map[string]int{"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}

func textOf(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case symbol:
		return string(v), true
	}
	return "", false
}

func equal(a, b any) bool {
	if as, ok := textOf(a); ok {
		if bs, ok := textOf(b); ok {
			_, aSym := a.(symbol)
			_, bSym := b.(symbol)
			if aSym || bSym {
				return strings.EqualFold(as, bs)
			}
			return as == bs
		}
		if art, ok := b.(*trace.Artifact); ok {
			return art.ID == as || art.Name == as
		}
		return false
	}
	switch x := a.(type) {
	case *trace.Artifact:
		switch y := b.(type) {
		case *trace.Artifact:
			return x == y || (x.ID != "" && x.ID == y.ID)
		case string, symbol:
			return equal(b, a)
		}
		return false
	case *trace.Position:
		switch y := b.(type) {
		case *trace.Position:
			return x == y || x.Index == y.Index
		case float64:
			return float64(x.Action.ID) == y
		}
		return false
	case float64:
		if p, ok := b.(*trace.Position); ok {
			return equal(p, a)
		}
	}
	return reflect.DeepEqual(a, b)
}

func compare(a, b any) (int, bool) {
	cmp := func(x, y float64) int {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok {
			return cmp(x, y), true
		}
	}
	if x, ok := a.(*trace.Position); ok {
		if y, ok := b.(*trace.Position); ok {
			return cmp(float64(x.Index), float64(y.Index)), true
		}
	}
	as, aok := textOf(a)
	bs, bok := textOf(b)
	if aok && bok {
		x, xs := severities[strings.ToLower(as)]
		y, ys := severities[strings.ToLower(bs)]
		if xs && ys {
			return cmp(float64(x), float64(y)), true
		}
		return strings.Compare(as, bs), true
	}
	return 0, false
}

// asList turns a value into the list a quantifier ranges over: a list as it
// is, nil as empty, anything else as a one-element list.
func asList(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	return []any{v}
}

func decodeRaw(raw []byte) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// IsBuiltinAtom reports whether name is an atom the language defines, which a
// user predicate cannot redefine.
func IsBuiltinAtom(name string) bool {
	switch name {
	case "action", "high_stakes_path", "start_event", "end_event", "error":
		return true
	}
	return categories[name] || actionStatuses[name] || resultStatuses[name]
}

// useIndexes turns the incremental indexes on (outputCandidates, count); a
// test turns them off to check that they change no answer.
var useIndexes = true

// outputCandidates narrows a quantifier over the run's actions whose body
// requires "x ∈ outputs(v)" (v the quantified variable, x not mentioning
// it) to the actions the trace's output index lists for x: no other action
// can satisfy the body, so ∃ and ∃! give the same answer over the
// candidates as over every action (data_flow_integrity stops scanning the
// run for each input). ok is false when the body has no such conjunct.
func (s *State) outputCandidates(f *ltl.Quantified, p *trace.Position, env *bindings) (cand []any, ok bool) {
	if f.Q == ltl.Forall || !useIndexes {
		return nil, false
	}
	var member *ltl.Member
	for _, c := range conjuncts(f.Body) {
		m, isMember := c.(*ltl.Member)
		if !isMember || m.Negated {
			continue
		}
		call, isCall := m.Set.(*ltl.Call)
		if !isCall || call.Func != "outputs" {
			continue
		}
		if v, isIdent := call.Args[0].(*ltl.Ident); isIdent && v.Name == f.Var && !usesName(m.Elem, f.Var) {
			member = m
			break
		}
	}
	if member == nil {
		return nil, false
	}
	// What equal() can match: a string, an output id or a produced
	// artifact's id or name; an artifact, an output id equal to its id or
	// name, or a produced artifact with its id.
	var keys []string
	var found []*trace.Position
	switch x := s.term(member.Elem, p, env).(type) {
	case symbol: // a type name matches output ids case-insensitively
		found = s.Trace.ProducersFold(string(x))
	case string:
		keys = []string{trace.OutputID + x, trace.OutputName + x}
	case *trace.Artifact:
		keys = []string{trace.OutputID + x.ID, trace.OutputID + x.Name}
	default:
		return []any{}, true // neither an id nor an artifact: in no action's outputs
	}
	for _, k := range keys {
		found = append(found, s.Trace.ProducersOf(k)...)
	}
	if p != nil {
		found = append(found, p) // a proposed step (the decision service) is not in the index yet
	}
	seen := map[int]bool{}          // by place: the index may hold a slim copy of a position
	limit := len(s.Trace.Positions) // a prefix view holds fewer positions than the index
	if s.Trace.PositionsDropped() {
		limit = math.MaxInt // the live trace of a monitor: every indexed position is sealed
	}
	for _, q := range found {
		if q.Index < limit && !seen[q.Index] {
			seen[q.Index] = true
			cand = append(cand, q)
		}
	}
	slices.SortFunc(cand, func(a, b any) int { return a.(*trace.Position).Index - b.(*trace.Position).Index })
	return cand, true
}

// conjuncts flattens a conjunction.
func conjuncts(f ltl.Formula) []ltl.Formula {
	if b, ok := f.(*ltl.Binary); ok && b.Op == ltl.OpAnd {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	return []ltl.Formula{f}
}

// usesName reports whether the name occurs as an identifier in n.
func usesName(n ltl.Node, name string) bool {
	found := false
	ltl.Walk(n, func(m ltl.Node) bool {
		if id, ok := m.(*ltl.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}
