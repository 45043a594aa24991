package gen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ponens/ponens/schema"
)

// RunConfig shapes a random run.
type RunConfig struct {
	MaxActions int
}

var (
	actionTypes = []string{"EditFile", "ReadFile", "GitCommit", "RunTests", "SearchCode", "Verify", "Decompose", "Deploy", "ToolCall"}
	categories  = []string{"activity", "gateway", "reasoning", "governance"}
	files       = []string{"a.py", "b.py", "c.py", "secrets/key.pem"}
	severities  = []string{"Info", "Low", "Medium", "High", "Critical"}
	results     = []string{"proved", "refuted", "sat", "unknown", "bounded"}
	strengths   = []string{"proof", "sat", "tests", "static_analysis", "attested", "vibes"}
)

// Run returns the events of a random, valid run: lifecycle, actions that
// produce and consume artifacts along derived_from lineage, residuals and
// resolutions, in seq order.
func Run(r *rand.Rand, id string, c RunConfig) []schema.Event {
	g := &runGen{r: r, id: id, ts: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if r.IntN(5) != 0 {
		g.emit(schema.Event{Type: schema.TypeRunStart, Start: &schema.RunStart{
			Trigger: json.RawMessage(`{"type":"UserRequest"}`), HighStakesPaths: []string{"secrets/"}}})
	}
	n := r.IntN(c.MaxActions + 1)
	for i := range n {
		g.action(int64(i + 1))
		if r.IntN(6) == 0 {
			g.residual()
		}
	}
	switch r.IntN(4) {
	case 0, 1:
		g.emit(schema.Event{Type: schema.TypeRunFinish, End: &schema.RunEnd{Outcome: json.RawMessage(`{"type":"ProcessCompleted"}`)}})
	case 2:
		g.emit(schema.Event{Type: schema.TypeRunError, End: &schema.RunEnd{Message: "boom"}})
	}
	return g.events
}

type runGen struct {
	r         *rand.Rand
	id        string
	ts        time.Time
	events    []schema.Event
	artifacts []string
	residuals []string
	nextArt   int
}

func (g *runGen) emit(ev schema.Event) {
	ev.V, ev.RunID, ev.Seq = schema.EnvelopeVersion, g.id, uint64(len(g.events)+1)
	g.ts = g.ts.Add(time.Second)
	ev.TS = g.ts
	g.events = append(g.events, ev)
}

func (g *runGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *runGen) action(id int64) {
	r := g.r
	a := &schema.Action{ID: id, Type: g.pick(actionTypes), Category: g.pick(categories)}
	switch r.IntN(3) {
	case 0:
		a.Status = "completed"
	case 1:
		a.Status = "failed"
	}
	if r.IntN(2) == 0 {
		a.Rationale = "because"
	}
	if r.IntN(3) == 0 {
		a.Label = "deploy to prod"
	}
	if r.IntN(3) != 0 {
		a.Evidence = []schema.Evidence{{Type: "FileRef", Ref: g.pick(files)}}
	}
	for range r.IntN(3) {
		if len(g.artifacts) > 0 {
			a.Inputs = append(a.Inputs, g.pick(g.artifacts))
		}
	}
	if r.IntN(4) == 0 {
		a.Extra = map[string]json.RawMessage{"target_artifact_id": json.RawMessage(fmt.Sprintf("%q", g.someArtifact()))}
	}
	// Outputs: some inline, some as artifact events after the action; a
	// declared output sometimes never arrives.
	var later []schema.Artifact
	for range r.IntN(3) {
		art := g.artifact(id)
		a.Outputs = append(a.Outputs, art.ID)
		if r.IntN(3) == 0 {
			a.Artifacts = append(a.Artifacts, art)
		} else if r.IntN(8) != 0 {
			later = append(later, art)
		}
	}
	g.emit(schema.Event{Type: schema.TypeAction, Action: a})
	for i := range later {
		g.emit(schema.Event{Type: schema.TypeArtifact, Artifact: &later[i]})
	}
	if r.IntN(6) == 0 { // a context artifact nobody produced
		art := g.artifact(0)
		g.emit(schema.Event{Type: schema.TypeArtifact, Artifact: &art})
	}
}

func (g *runGen) someArtifact() string {
	if len(g.artifacts) == 0 || g.r.IntN(3) == 0 {
		return "missing"
	}
	return g.pick(g.artifacts)
}

func (g *runGen) artifact(producer int64) schema.Artifact {
	r := g.r
	g.nextArt++
	id := fmt.Sprintf("art%d", g.nextArt)
	types := []string{"VerificationResult", "Decomposition", "SourceCode", "IMLModel", "VerificationGoal", "ConformanceResult"}
	art := schema.Artifact{ID: id, Type: g.pick(types), Name: g.pick(files)}
	if producer > 0 {
		p := producer
		art.ProducerActionID = &p
	}
	if len(g.artifacts) > 0 && r.IntN(2) == 0 {
		art.DerivedFrom = []string{g.pick(g.artifacts)}
	}
	payload := map[string]any{"status": g.pick(results)}
	if r.IntN(2) == 0 {
		payload["oracle"] = map[string]any{"id": "imandrax", "oracle_type": "prover", "evidence_strength": g.pick(strengths)}
	}
	if art.Type == "ConformanceResult" {
		payload["reference"] = "ref:atlas:x@" + fmt.Sprint(r.IntN(3))
	}
	art.Payload, _ = json.Marshal(payload)
	g.artifacts = append(g.artifacts, id)
	return art
}

func (g *runGen) residual() {
	r := g.r
	if len(g.residuals) > 0 && r.IntN(3) == 0 {
		g.nextArt++
		pl, _ := json.Marshal(map[string]any{"residual_id": g.pick(g.residuals), "status": "Addressed"})
		g.emit(schema.Event{Type: schema.TypeArtifact, Artifact: &schema.Artifact{
			ID: fmt.Sprintf("res%d", g.nextArt), Type: "ResidualResolution", Payload: pl}})
		return
	}
	g.nextArt++
	id := fmt.Sprintf("res%d", g.nextArt)
	pl, _ := json.Marshal(map[string]any{"severity": g.pick(severities), "target": g.pick(files), "statement": "gap"})
	g.emit(schema.Event{Type: schema.TypeResidual, Residual: &schema.Artifact{ID: id, Type: "Residual", Payload: pl}})
	g.residuals = append(g.residuals, id)
}
