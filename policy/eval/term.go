package eval

import (
	"fmt"
	"strings"

	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/trace"
)

// term evaluates a term to a value: nil, string, symbol, float64, bool,
// []any, map[string]any, *trace.Position (an action) or *trace.Artifact.
func (s *State) term(t ltl.Term, p *trace.Position, env *bindings) any {
	switch t := t.(type) {
	case *ltl.Ident:
		if v, ok := env.lookup(t.Name); ok {
			return v
		}
		return s.ident(t.Name, p, env)
	case *ltl.Field:
		return field(s.Trace, s.term(t.X, p, env), t.Name)
	case *ltl.Str:
		return t.Value
	case *ltl.Num:
		return t.Value
	case *ltl.EmptySet:
		return []any{}
	case *ltl.Call:
		return s.call(t, p, env)
	case *ltl.Count:
		return float64(s.count(t, env))
	case *ltl.SetLit:
		out := make([]any, len(t.Elems))
		for i, e := range t.Elems {
			out[i] = s.term(e, p, env)
		}
		return out
	case *ltl.Comprehension:
		var dom []any
		if t.Domain == nil {
			dom = s.collection("artifacts")
		} else {
			dom = asList(s.term(t.Domain, p, env))
		}
		out := []any{}
		for _, x := range dom {
			inner := &bindings{t.Var, x, env}
			if s.holds(t.Guard, p, inner, nil) {
				out = append(out, s.term(t.Expr, p, inner))
			}
		}
		return out
	}
	panic(fmt.Sprintf("eval: unknown term %T", t))
}

// ident resolves an unbound name: a collection, a CamelCase constant, the
// current action, a field of the artifact a type atom matched (when env
// holds one and it has that field), or a field of the current action.
func (s *State) ident(name string, p *trace.Position, env *bindings) any {
	if ltl.Collections[name] {
		return s.collection(name)
	}
	if isTypeName(name) {
		return symbol(name)
	}
	if p == nil {
		return nil
	}
	if ltl.IsCurrentAction(name) {
		return p
	}
	if subj, ok := env.lookup(subjectName); ok {
		if v := field(s.Trace, subj, name); v != nil {
			return v
		}
	}
	return field(s.Trace, p, name)
}

func (s *State) collection(name string) []any {
	t := s.Trace
	var out []any
	switch name {
	case "actions":
		for _, p := range t.Positions {
			out = append(out, p)
		}
	case "artifacts":
		for _, a := range t.Artifacts {
			out = append(out, a)
		}
	case "residuals":
		for _, a := range t.Residuals {
			out = append(out, a)
		}
	case "telemetry":
		out = append(out, t.Telemetry...)
	case "files_modified":
		for _, f := range t.FilesModified() {
			out = append(out, f)
		}
	}
	return out
}

func (s *State) call(c *ltl.Call, p *trace.Position, env *bindings) any {
	if id, ok := c.Args[0].(*ltl.Ident); ok && c.Func == "ancestors" && id.Name == "derived_from" {
		_, bound := env.lookup(id.Name)
		_, scoped := env.lookup(subjectName)
		if !bound && !scoped {
			if p == nil {
				return []any{}
			}
			return artifactsOf(p.Lineage())
		}
	}
	x := s.term(c.Args[0], p, env)
	if str, ok := x.(string); ok {
		if a := s.Trace.Lookup(str); a != nil {
			x = a
		}
	}
	switch x := x.(type) {
	case *trace.Position:
		switch c.Func {
		case "inputs":
			return refs(x.Action.Inputs, x.Inputs)
		case "outputs":
			return refs(x.Action.Outputs, x.Produced)
		case "target":
			return x.Target()
		case "ancestors":
			return artifactsOf(x.Lineage())
		}
	case *trace.Artifact:
		switch c.Func {
		case "inputs":
			return artifactsOf(x.Parents)
		case "outputs":
			return []any{}
		case "target":
			return x.Target()
		case "ancestors":
			return artifactsOf(x.Ancestors())
		}
	}
	if list, ok := x.([]any); ok && c.Func == "ancestors" {
		return s.ancestorsOf(list)
	}
	if c.Func == "target" {
		return nil
	}
	return []any{}
}

// ancestorsOf is ancestors(S) of a set: the artifacts of S (ids resolved)
// and all their derived_from ancestors, each once.
func (s *State) ancestorsOf(list []any) []any {
	out := []any{}
	seen := map[*trace.Artifact]bool{}
	add := func(a *trace.Artifact) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, x := range list {
		var a *trace.Artifact
		switch x := x.(type) {
		case *trace.Artifact:
			a = x
		case string:
			a = s.Trace.Lookup(x)
		}
		if a == nil {
			continue
		}
		add(a)
		for _, b := range a.Ancestors() {
			add(b)
		}
	}
	return out
}

// refs lists an action's input or output ids, each as the artifact it
// resolves to when known, else as the id.
func refs(ids []string, known []*trace.Artifact) []any {
	out := make([]any, 0, len(ids))
	seen := map[*trace.Artifact]bool{}
	for _, id := range ids {
		var hit *trace.Artifact
		for _, a := range known {
			if a.ID == id || a.Name == id {
				hit = a
				break
			}
		}
		if hit != nil {
			seen[hit] = true
			out = append(out, hit)
		} else {
			out = append(out, id)
		}
	}
	for _, a := range known {
		if !seen[a] {
			out = append(out, a)
		}
	}
	return out
}

func artifactsOf(as []*trace.Artifact) []any {
	out := make([]any, len(as))
	for i, a := range as {
		out[i] = a
	}
	return out
}

// field reads x.name.
func field(t *trace.Trace, x any, name string) any {
	switch x := x.(type) {
	case *trace.Position:
		switch name {
		case "id":
			return float64(x.Action.ID)
		case "type":
			return x.Action.Type
		case "target":
			return x.Target()
		case "index", "position":
			return float64(x.Index)
		case "inputs":
			return refs(x.Action.Inputs, x.Inputs)
		case "outputs":
			return refs(x.Action.Outputs, x.Produced)
		}
		return x.Field(name)
	case *trace.Artifact:
		switch name {
		case "id", "artifact_id":
			return x.ID
		case "type", "artifact_type":
			return x.Type
		case "name":
			return x.Name
		case "ref":
			return x.Ref
		case "derived_from":
			return artifactsOf(x.Parents)
		case "producer":
			if x.Producer == nil {
				return nil
			}
			return x.Producer
		case "target":
			return x.Target()
		case "status":
			if sameType(x.Type, "Residual") {
				return residualStatus(t, x)
			}
		}
		if v, ok := x.Payload()[name]; ok {
			return v
		}
		if raw, ok := x.Extra[name]; ok {
			return decodeRaw(raw)
		}
		return nil
	case map[string]any:
		return x[name]
	case string:
		if a := t.Lookup(x); a != nil {
			return field(t, a, name)
		}
	}
	return nil
}

// residualStatus is a residual's effective status: its own (Open when
// absent), then every ResidualResolution naming it, in arrival order.
func residualStatus(t *trace.Trace, r *trace.Artifact) any {
	status := "Open"
	if s, ok := r.Payload()["status"].(string); ok && s != "" {
		status = s
	}
	for _, a := range t.Artifacts {
		if a.Type != "ResidualResolution" {
			continue
		}
		pl := a.Payload()
		if id, _ := pl["residual_id"].(string); id == r.ID {
			if s, ok := pl["status"].(string); ok && s != "" {
				status = s
			}
		}
	}
	return strings.TrimSpace(status)
}

// countMemo is a running count kept in Trace.Memo: n positions among the
// first upto hold the counted formula.
type countMemo struct{ n, upto int }

// count is count(φ) over the run's positions. When φ's value at a position
// cannot depend on what the run holds (atoms of the action and connectives
// only) and no quantifier binds anything, the count is kept running in the
// trace's memo, so a monitor pays for each position once instead of
// recounting the run at every position.
func (s *State) count(c *ltl.Count, env *bindings) int {
	ps := s.Trace.Positions
	if useIndexes && env == nil && s.positional(c.X) {
		m, _ := s.Trace.Memo[c].(countMemo)
		if m.upto <= len(ps) { // a prefix view may hold fewer positions than counted
			for _, q := range ps[m.upto:] {
				if s.holds(c.X, q, nil, nil) {
					m.n++
				}
			}
			m.upto = len(ps)
			if s.Trace.Memo == nil {
				s.Trace.Memo = map[any]any{}
			}
			s.Trace.Memo[c] = m
			return m.n
		}
	}
	n := 0
	for _, q := range ps {
		if s.holds(c.X, q, env, nil) {
			n++
		}
	}
	return n
}

// positional reports whether f's value at a position depends only on that
// action: built-in atoms of the action, type calls, attribution atoms, field
// predicates and connectives.
func (s *State) positional(f ltl.Formula) bool {
	ok := true
	ltl.Walk(f, func(n ltl.Node) bool {
		switch n := n.(type) {
		case *ltl.Atom:
			_, pred := s.Opts.Predicates[n.Name]
			ok = ok && !pred && n.Name != "start_event" && n.Name != "end_event"
		case *ltl.Compare:
			_, isIdent := n.L.(*ltl.Ident)
			_, isEmpty := n.R.(*ltl.EmptySet)
			ok = ok && isIdent && isEmpty
			return false
		case *ltl.Bool, *ltl.Unary, *ltl.Binary, *ltl.TypeCall, *ltl.Attribution:
		default:
			ok = false
		}
		return ok
	})
	return ok
}
