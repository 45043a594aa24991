// Package trace is the model a policy ranges over: a run's actions as
// temporal positions over a typed artifact graph, built from the event stream
// one event at a time (SEMANTICS.md §1).
//
// # Positions and sealing
//
// Every action event opens a position. Artifacts the action produced may
// follow it as artifact events, so a position is sealed — its atoms fixed —
// when the last artifact its action declared in outputs has arrived, at
// once when it declares none, when the next action arrives, or when the run
// ends. Artifacts produced by an action are exactly those carried inline in
// the action event plus those that arrive while its position is open and
// name it as producer or are listed in its outputs. An artifact arriving
// after its producer's position was sealed joins the graph as context: it is
// nobody's output. The reference-trace converter emits every artifact
// directly after its producer and lists it in the producer's outputs, so a
// converted trace loses nothing.
//
// Both the reference evaluator (a whole Trace) and the incremental monitor
// (a Builder's OnSeal callback) see the same positions.
package trace

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/ponens/ponens/schema"
)

// Trace is one run, complete or as far as it has been read.
type Trace struct {
	RunID     string
	Start     *schema.RunStart // nil when the run has no run.start
	End       *schema.Event    // the closing event; nil while open or when missing
	Positions []*Position
	Artifacts []*Artifact // every artifact and residual, in arrival order
	Residuals []*Artifact // residual events and artifacts of type Residual
	Telemetry []any
	Events    int    // events folded in
	LastSeq   uint64 // seq of the last event folded in
	// Version changes whenever anything a formula can read changes: a
	// cache of values computed over the trace is valid while it stays put.
	Version int

	// Memo is scratch space for an evaluator's incremental indexes over this
	// run (running counts), keyed by the evaluator's own keys.
	Memo map[any]any

	byID      map[string]*Artifact
	byName    map[string]*Artifact
	producers map[string][]*Position // output id or name → the positions that output it
	dropped   bool                   // positions are not kept (Builder.DropPositions)
	view      bool                   // a prefix view: artifacts with order ≥ limit are not there yet
	limit     int
}

// PositionsDropped reports whether the trace keeps no positions
// (Builder.DropPositions): Positions is empty, and ProducersOf, when kept
// (Builder.IndexProducers), lists slim copies of every sealed position.
func (t *Trace) PositionsDropped() bool { return t.dropped }

// Position is one action of the run: a temporal position.
type Position struct {
	Index    int           // 0-based position in the run
	Event    *schema.Event // the action event
	Action   *schema.Action
	Produced []*Artifact // artifacts this action produced (fixed at seal)
	Inputs   []*Artifact // resolved inputs (unknown ids are skipped)

	fields     map[string]any
	target     string
	targetDone bool
	targets    []string // nil until TargetSet is first asked
	// Sizes of the run's collections when the position was sealed: what a
	// prefix view of the run at this position holds.
	nArtifacts, nResiduals, nTelemetry int
	started                            bool // run.start had arrived
}

// Artifact is one node of the artifact graph.
type Artifact struct {
	*schema.Artifact
	order    int       // index in Trace.Artifacts
	Producer *Position // the position that produced it; nil for context artifacts
	Parents  []*Artifact

	payload map[string]any
	decoded bool
	// lineageTargets is nil until LineageTargets is first asked.
	lineageTargets []string
}

// Lookup returns the artifact with the given id, or else the latest one with
// that name (inputs and outputs sometimes name artifacts).
func (t *Trace) Lookup(idOrName string) *Artifact {
	if t.view { // the latest that had arrived by then: scan (views serve the reference evaluator)
		for i := t.limit - 1; i >= 0; i-- {
			if a := t.Artifacts[i]; a.ID == idOrName {
				return a
			}
		}
		for i := t.limit - 1; i >= 0; i-- {
			if a := t.Artifacts[i]; a.Name == idOrName {
				return a
			}
		}
		return nil
	}
	if a := t.byID[idOrName]; a != nil {
		return a
	}
	return t.byName[idOrName]
}

// Key spaces of ProducersOf.
const (
	OutputID   = "id:"   // an id an action lists in outputs, or the id of an artifact it produced
	OutputName = "name:" // the name of an artifact it produced
)

// ProducersOf returns, in order, the positions that output key: OutputID+id
// or OutputName+name. It is the index that spares "x ∈ outputs(b)" a scan of
// every action. Positions are indexed only while the builder keeps them.
func (t *Trace) ProducersOf(key string) []*Position { return t.producers[key] }

// ProducersFold lists the positions that output an id or name equal to x
// under Unicode case folding, each once, in no particular order: what a type
// name (compared case-insensitively) can match. It reads the whole index.
func (t *Trace) ProducersFold(x string) []*Position {
	var out []*Position
	seen := map[*Position]bool{}
	for key, ps := range t.producers {
		name, ok := strings.CutPrefix(key, OutputID)
		if !ok {
			name, ok = strings.CutPrefix(key, OutputName)
		}
		if !ok || !strings.EqualFold(name, x) {
			continue
		}
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// Prefix returns a read-only view of t as it stood when p was sealed: the
// positions up to and including p and the artifacts, residuals and
// telemetry that had arrived by then, with no closing event. The reference
// evaluator reads a leaf that refers to its position through this view,
// which is what a monitor sees at that moment.
func (t *Trace) Prefix(p *Position) *Trace {
	v := *t
	v.Positions = t.Positions[:p.Index+1]
	v.Artifacts = t.Artifacts[:p.nArtifacts]
	v.Residuals = t.Residuals[:p.nResiduals]
	v.Telemetry = t.Telemetry[:p.nTelemetry]
	v.End = nil
	if !p.started {
		v.Start = nil
	}
	v.view, v.limit = true, p.nArtifacts
	return &v
}

// HighStakesPaths returns the trace-level high-stakes path fragments.
func (t *Trace) HighStakesPaths() []string {
	if t.Start == nil {
		return nil
	}
	return t.Start.HighStakesPaths
}

// modelKeys are the run.start members that declare reference models
// (ref_model).
var modelKeys = []string{"reference_models", "policies"}

// startFacts keeps of a run.start's extra members those formulas read: the
// reference models it declares and files_modified.
func startFacts(extra map[string]json.RawMessage) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for _, k := range append(modelKeys, "files_modified") {
		if raw, ok := extra[k]; ok {
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[k] = raw
		}
	}
	return out
}

// FilesModified returns the trace-level files_modified list (the strings in
// it), or nil when the run declares none.
func (t *Trace) FilesModified() []string {
	if t.Start == nil {
		return nil
	}
	var list []any
	if json.Unmarshal(t.Start.Extra["files_modified"], &list) != nil {
		return nil
	}
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// DeclaresModel reports whether the run declares reference model id: an
// entry of its reference_models or policies whose id, policy_id,
// reference_model_id or reference_model is id.
func (t *Trace) DeclaresModel(id string) bool {
	if t.Start == nil || id == "" {
		return false
	}
	for _, k := range modelKeys {
		var entries []map[string]any
		if json.Unmarshal(t.Start.Extra[k], &entries) != nil {
			continue
		}
		for _, e := range entries {
			for _, f := range []string{"id", "policy_id", "reference_model_id", "reference_model"} {
				if v, ok := e[f].(string); ok && v == id {
					return true
				}
			}
		}
	}
	return false
}

// Outcome is how the run ended: completed (run.finish), errored (run.error)
// or canceled (run.cancel, or no closing event).
func (t *Trace) Outcome() string {
	if t.End == nil {
		return "canceled"
	}
	switch t.End.Type {
	case schema.TypeRunFinish:
		return "completed"
	case schema.TypeRunError:
		return "errored"
	}
	return "canceled"
}

// Payload returns the artifact's payload as a decoded JSON object (nil when
// absent or not an object).
func (a *Artifact) Payload() map[string]any {
	if !a.decoded {
		a.decoded = true
		_ = json.Unmarshal(a.Artifact.Payload, &a.payload)
	}
	return a.payload
}

// Status returns payload.status, lower-cased: proved, refuted, sat, passed, ….
func (a *Artifact) Status() string {
	s, _ := a.Payload()["status"].(string)
	return strings.ToLower(s)
}

// Target returns what the artifact is about: payload path, file or target,
// else its name.
func (a *Artifact) Target() string {
	p := a.Payload()
	for _, k := range []string{"path", "file", "target"} {
		if s, ok := p[k].(string); ok && s != "" {
			return s
		}
	}
	return a.Name
}

// Ancestors returns the transitive closure of derived_from from a, a itself
// excluded, each artifact once.
func (a *Artifact) Ancestors() []*Artifact {
	var out []*Artifact
	seen := map[*Artifact]bool{a: true}
	stack := append([]*Artifact(nil), a.Parents...)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		out = append(out, x)
		stack = append(stack, x.Parents...)
	}
	return out
}

// Lineage returns the artifacts in p's lineage: its inputs and outputs and
// all their derived_from ancestors, each once.
func (p *Position) Lineage() []*Artifact {
	var out []*Artifact
	seen := map[*Artifact]bool{}
	var visit func(a *Artifact)
	visit = func(a *Artifact) {
		if seen[a] {
			return
		}
		seen[a] = true
		out = append(out, a)
		for _, q := range a.Parents {
			visit(q)
		}
	}
	for _, a := range p.Inputs {
		visit(a)
	}
	for _, a := range p.Produced {
		visit(a)
	}
	return out
}

// Target returns the action's own target: its first FileRef evidence, else
// request.path, else the name of its first output artifact.
func (p *Position) Target() string {
	if !p.targetDone {
		p.target, p.targetDone = p.findTarget(), true
	}
	return p.target
}

// TargetSet returns the targets that scope P_target and H_target at p: its
// own target, and the lineage targets (Artifact.LineageTargets) of its
// inputs and outputs, sorted, without duplicates. It is computed once, when
// first asked (the position is sealed by then).
func (p *Position) TargetSet() []string {
	if p.targets == nil {
		set := sortedUnique([]string{p.Target()})
		for _, as := range [][]*Artifact{p.Inputs, p.Produced} {
			for _, a := range as {
				set = union(set, a.LineageTargets())
			}
		}
		p.targets = set
	}
	return p.targets
}

// union merges two sorted sets. When one holds the other it is returned as
// it is, so positions and artifacts whose lineage adds nothing new share one
// slice.
func union(a, b []string) []string {
	switch {
	case containsAll(b, a):
		return b
	case containsAll(a, b):
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i], b[j]); {
		case c < 0:
			out = append(out, a[i])
			i++
		case c > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// LineageTargets returns the targets of a's lineage: the target and name of
// a and of each of its derived_from ancestors, and the own target of the
// action that produced each of them, sorted, without duplicates. It is
// computed once per artifact from its parents' sets, so its cost grows with
// the number of distinct targets in the lineage, not with its depth.
func (a *Artifact) LineageTargets() []string {
	if a.lineageTargets == nil {
		own := []string{a.Target(), a.Name}
		if a.Producer != nil {
			own = append(own, a.Producer.Target())
		}
		set := sortedUnique(own)
		for _, q := range a.Parents {
			set = union(set, q.LineageTargets())
		}
		a.lineageTargets = set
	}
	return a.lineageTargets
}

// containsAll reports whether the sorted set holds every string of the
// sorted set xs.
func containsAll(set, xs []string) bool {
	if len(xs) > len(set) {
		return false
	}
	i := 0
	for _, x := range xs {
		for i < len(set) && set[i] < x {
			i++
		}
		if i == len(set) || set[i] != x {
			return false
		}
	}
	return true
}

func (p *Position) findTarget() string {
	for _, e := range p.Action.Evidence {
		if e.Type == "FileRef" && e.Ref != "" {
			return e.Ref
		}
	}
	if len(p.Action.Request) > 0 {
		var req struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(p.Action.Request, &req) == nil && req.Path != "" {
			return req.Path
		}
	}
	if len(p.Produced) > 0 {
		return p.Produced[0].Name
	}
	return ""
}

// Field returns the action's field name as decoded JSON (string, float64,
// bool, []any, map[string]any) or nil when absent. Fields kept in the
// action's extra map are found too.
func (p *Position) Field(name string) any {
	a := p.Action
	switch name { // the common string fields, without building the map
	case "type":
		return nonEmpty(a.Type)
	case "category":
		return nonEmpty(a.Category)
	case "label":
		return nonEmpty(a.Label)
	case "rationale":
		return nonEmpty(a.Rationale)
	case "detail":
		return nonEmpty(a.Detail)
	case "result_summary":
		return nonEmpty(a.ResultSummary)
	case "status":
		return nonEmpty(a.Status)
	case "capability":
		return nonEmpty(a.Capability)
	}
	if p.fields == nil {
		p.fields = actionFields(p.Action)
	}
	return p.fields[name]
}

// nonEmpty is s, or nil when s is empty: absent and empty read alike, as
// they do through the JSON map (omitempty).
func nonEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func actionFields(a *schema.Action) map[string]any {
	m := map[string]any{}
	raw, err := json.Marshal(a)
	if err == nil {
		_ = json.Unmarshal(raw, &m)
	}
	if extra, ok := m["extra"].(map[string]any); ok {
		delete(m, "extra")
		for k, v := range extra {
			if _, dup := m[k]; !dup {
				m[k] = v
			}
		}
	}
	return m
}

// sortedUnique sorts ss and drops empty strings and duplicates.
func sortedUnique(ss []string) []string {
	sort.Strings(ss)
	out := ss[:0]
	for i, s := range ss {
		if s != "" && (i == 0 || s != ss[i-1]) {
			out = append(out, s)
		}
	}
	return out
}
