package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// decomposition reads a decomposition's payload: regions[{id,
// constraints, invariant, model, model_eval}], complete, bound, scope and
// assumptions. Values of an unexpected form are kept as their JSON text
// where text is expected, and reported when they cannot be read at all.
func (x *extractor) decomposition(payload json.RawMessage, where string) *Decomposition {
	var p struct {
		Complete    json.RawMessage `json:"complete"`
		Bound       json.RawMessage `json:"bound"`
		Depth       json.RawMessage `json:"depth_bound"`
		Regions     json.RawMessage `json:"regions"`
		Scope       json.RawMessage `json:"scope"`
		Assumptions json.RawMessage `json:"assumptions"`
	}
	d := &Decomposition{}
	if len(payload) == 0 || json.Unmarshal(payload, &p) != nil {
		x.problem(where, "payload", "an object with regions")
		return d
	}
	if len(p.Complete) > 0 && string(p.Complete) != "null" {
		var b bool
		if json.Unmarshal(p.Complete, &b) == nil {
			d.Complete = &b
		} else {
			x.problem(where, "payload.complete", "true or false")
		}
	}
	bound := p.Bound
	if len(bound) == 0 || string(bound) == "null" {
		bound = p.Depth
	}
	if len(bound) > 0 && string(bound) != "null" {
		var n int
		if json.Unmarshal(bound, &n) == nil {
			d.Bound = &n
		} else {
			x.problem(where, "payload.bound", "an integer depth or null")
		}
	}
	if len(p.Scope) > 0 && string(p.Scope) != "null" {
		s := jsonText(p.Scope)
		d.Scope = &s
	}
	if len(p.Assumptions) > 0 && string(p.Assumptions) != "null" {
		if json.Unmarshal(p.Assumptions, &d.Assumptions) != nil {
			d.Assumptions = []json.RawMessage{p.Assumptions} // one assumption, not a list: kept as it is
		}
		for i, a := range d.Assumptions {
			d.Assumptions[i] = compact(a)
		}
	}
	var regions []json.RawMessage
	if len(p.Regions) > 0 && string(p.Regions) != "null" && json.Unmarshal(p.Regions, &regions) != nil {
		x.problem(where, "payload.regions", "an array of regions")
	}
	for i, raw := range regions {
		r, ok := region(raw, i)
		if !ok {
			x.problem(where, fmt.Sprintf("payload.regions[%d]", i), "an object")
		}
		d.Regions = append(d.Regions, r)
	}
	return d
}

// region reads one region; a region that is not an object keeps its JSON
// text as its invariant.
func region(raw json.RawMessage, i int) (Region, bool) {
	var p struct {
		ID          json.RawMessage `json:"id"`
		Constraints json.RawMessage `json:"constraints"`
		Invariant   json.RawMessage `json:"invariant"`
		Outcome     json.RawMessage `json:"outcome"`
		Model       json.RawMessage `json:"model"`
		ModelEval   json.RawMessage `json:"model_eval"`
		Witness     *Witness        `json:"witness"`
	}
	r := Region{ID: fmt.Sprint(i + 1), Constraints: []string{}}
	if json.Unmarshal(raw, &p) != nil {
		r.Invariant = string(raw)
		return r, false
	}
	if id := jsonText(p.ID); len(p.ID) > 0 && id != "null" {
		r.ID = id
	}
	var list []json.RawMessage
	switch {
	case len(p.Constraints) == 0 || string(p.Constraints) == "null":
	case json.Unmarshal(p.Constraints, &list) == nil:
		for _, c := range list {
			r.Constraints = append(r.Constraints, jsonText(c))
		}
	default:
		r.Constraints = append(r.Constraints, jsonText(p.Constraints))
	}
	if len(p.Invariant) > 0 && string(p.Invariant) != "null" {
		r.Invariant = jsonText(p.Invariant)
	}
	if len(p.Outcome) > 0 && string(p.Outcome) != "null" {
		r.Outcome = jsonText(p.Outcome)
	}
	switch {
	case p.Witness != nil && len(p.Witness.Input) > 0:
		r.Witness = &Witness{Input: compact(p.Witness.Input), Output: compact(p.Witness.Output)}
	case len(p.Model) > 0 && string(p.Model) != "null":
		r.Witness = &Witness{Input: compact(p.Model)}
		if len(p.ModelEval) > 0 && string(p.ModelEval) != "null" {
			r.Witness.Output = compact(p.ModelEval)
		}
	}
	return r, true
}

// compact is raw JSON without insignificant space.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// conformanceOutcomes maps result statuses to outcomes when the payload
// states none.
var conformanceOutcomes = map[string]string{
	"passed": "met", "matched": "met",
	"failed": "not_met", "mismatched": "not_met",
	"partial": "partial", "unknown": "unknown", "error": "error",
}

// conformance reads a conformance or co-simulation result: reference,
// outcome, total, diverged and raised (counts, or lists of region ids), and
// results[{region, outcome}] per region.
func (x *extractor) conformance(p map[string]any, status, where string) *Conformance {
	c := &Conformance{}
	for _, k := range []string{"reference", "reference_model", "reference_id"} {
		if s := str(p, k); s != "" {
			c.Reference = s
			break
		}
	}
	if c.Reference == "" {
		oracle, _ := p["oracle"].(map[string]any)
		c.Reference = str(oracle, "specializes")
	}
	c.Outcome = strings.ToLower(str(p, "outcome"))
	if c.Outcome == "" {
		c.Outcome = conformanceOutcomes[status]
	}
	c.Total = x.count(p["total"], nil, where, "total")
	c.Diverged = x.count(p["diverged"], &c.DivergedRegions, where, "diverged")
	c.Raised = x.count(p["raised"], &c.RaisedRegions, where, "raised")
	results, _ := p["results"].([]any)
	if results == nil && p["results"] != nil {
		x.problem(where, "payload.results", "an array of {region, outcome}")
	}
	var div, rai []string
	for _, r := range results {
		m, _ := r.(map[string]any)
		id := scalarText(m["region"])
		if id == "" {
			id = scalarText(m["id"])
		}
		switch strings.ToLower(str(m, "outcome")) {
		case "diverged":
			div = append(div, id)
		case "raised":
			rai = append(rai, id)
		}
	}
	if results != nil {
		if c.DivergedRegions == nil {
			c.DivergedRegions = append([]string{}, div...)
		}
		if c.RaisedRegions == nil {
			c.RaisedRegions = append([]string{}, rai...)
		}
		if c.Total == nil {
			n := len(results)
			c.Total = &n
		}
	}
	for _, f := range []struct {
		n   **int
		ids []string
	}{{&c.Diverged, c.DivergedRegions}, {&c.Raised, c.RaisedRegions}} {
		if *f.n == nil && f.ids != nil {
			n := len(f.ids)
			*f.n = &n
		}
	}
	return c
}

// count reads a count that may be given as a number or as the list of the
// region ids counted (then kept in ids).
func (x *extractor) count(v any, ids *[]string, where, field string) *int {
	switch v := v.(type) {
	case nil:
		return nil
	case float64:
		n := int(v)
		return &n
	case []any:
		if ids != nil {
			*ids = []string{}
			for _, id := range v {
				*ids = append(*ids, scalarText(id))
			}
			n := len(v)
			return &n
		}
	}
	x.problem(where, "payload."+field, "a count")
	return nil
}

// problem notes a payload field that could not be read.
func (x *extractor) problem(where, field, expected string) {
	x.problems = append(x.problems, fmt.Sprintf("%s: %s: expected %s", where, field, expected))
}
