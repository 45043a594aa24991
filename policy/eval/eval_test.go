package eval

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// mk builds a run whose positions are actions of the given types; a type may
// carry "+status" ("RunTests+completed") and "@target" ("EditFile@a.py").
func mk(closed bool, specs ...string) *trace.Trace {
	var events []schema.Event
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(e schema.Event) {
		e.V, e.RunID, e.Seq, e.TS = 1, "t", uint64(len(events)+1), ts
		events = append(events, e)
	}
	add(schema.Event{Type: schema.TypeRunStart, Start: &schema.RunStart{HighStakesPaths: []string{"secrets/"}}})
	for i, s := range specs {
		typ, target, _ := strings.Cut(s, "@")
		typ, status, _ := strings.Cut(typ, "+")
		a := &schema.Action{ID: int64(i + 1), Type: typ, Status: status, Category: "activity"}
		if target != "" {
			a.Evidence = []schema.Evidence{{Type: "FileRef", Ref: target}}
		}
		add(schema.Event{Type: schema.TypeAction, Action: a})
	}
	if closed {
		add(schema.Event{Type: schema.TypeRunFinish})
	}
	return trace.Build("t", events)
}

// values returns the formula's value at each position, as "1 0 1".
func values(src string, t *trace.Trace) string {
	f := ltl.MustParse(src)
	var out []string
	for i := range t.Positions {
		if HoldsAt(f, t, nil, i) {
			out = append(out, "1")
		} else {
			out = append(out, "0")
		}
	}
	return strings.Join(out, " ")
}

// TestOperators checks each operator against the definitions of seed 000
// §2.8 on the trace a b a c (positions 0..3).
func TestOperators(t *testing.T) {
	tr := mk(true, "A", "B", "A", "C")
	tests := []struct{ src, want string }{
		{"A", "1 0 1 0"},
		{"¬A", "0 1 0 1"},
		{"A ∧ B", "0 0 0 0"},
		{"A ∨ B", "1 1 1 0"},
		{"A → B", "0 1 0 1"},
		{"G(A ∨ B ∨ C)", "1 1 1 1"},
		{"G(A ∨ B)", "0 0 0 0"},
		{"G(C)", "0 0 0 1"}, // the last position: only itself
		{"F(C)", "1 1 1 1"},
		{"F(B)", "1 1 0 0"},
		{"X(B)", "1 0 0 0"},
		{"X(⊤)", "1 1 1 0"}, // strong next: false at the last position
		{"¬X(¬⊤)", "1 1 1 1"},
		{"A U B", "1 1 0 0"},
		{"⊤ U C", "1 1 1 1"},
		{"A U C", "0 0 1 1"},
		{"P(A)", "0 1 1 1"},
		{"P(C)", "0 0 0 0"},
		{"H(A)", "1 1 0 0"}, // vacuous at position 0
		{"H(¬C)", "1 1 1 1"},
		{"B S A", "0 1 1 1"},      // witness strictly before
		{"¬C S A", "0 1 1 1"},     // ¬C held since the last A
		{"A S_last B", "0 1 0 1"}, // A since the most recent B (position 1)
		{"B S_last C", "0 0 1 1"}, // no C before: since the start
		{"P(A) ∧ H(¬C)", "0 1 1 1"},
		{"G(A → F(C))", "1 1 1 1"},
		{"G(A → X(B))", "0 0 0 1"},
	}
	for _, tt := range tests {
		if got := values(tt.src, tr); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.src, got, tt.want)
		}
	}
}

// TestEmptyAndSingle covers the edges: the empty trace (only evaluated at
// position 0 = its end) and a one-position trace.
func TestEmptyAndSingle(t *testing.T) {
	empty := mk(true)
	for src, want := range map[string]bool{
		"G(A)": true, "F(⊤)": false, "X(⊤)": false, "A U B": false, "A": false, "¬A": true,
		"P(⊤)": false, "H(⊥)": true, "A S B": false, "action": false, "¬action": true,
		"start_event": true, "end_event": true, "count(A) = 0": true,
	} {
		if got := HoldsAt(ltl.MustParse(src), empty, nil, 0); got != want {
			t.Errorf("empty trace: %s = %v, want %v", src, got, want)
		}
	}
	one := mk(false, "A")
	for src, want := range map[string]bool{
		"G(A)": true, "F(A)": true, "X(⊤)": false, "¬X(⊤)": true, "P(A)": false, "H(⊥)": true,
		"A U A": true, "B U A": true, "A U B": false, "end_event": false,
	} {
		if got := HoldsAt(ltl.MustParse(src), one, nil, 0); got != want {
			t.Errorf("one position: %s = %v, want %v", src, got, want)
		}
	}
}

func TestScopedOperators(t *testing.T) {
	tr := mk(true, "ReadFile@a.py", "EditFile@b.py", "EditFile@a.py", "ReadFile@b.py", "EditFile")
	for src, want := range map[string]string{
		"P_target(ReadFile)":  "0 0 1 0 0", // the last edit has no target: false
		"H_target(ReadFile)":  "1 1 1 0 1", // no target: vacuously true
		"P(ReadFile)":         "0 1 1 1 1",
		"P_target(EditFile)":  "0 0 0 1 0",
		"H_target(¬EditFile)": "1 1 1 0 1",
	} {
		if got := values(src, tr); got != want {
			t.Errorf("%s: got %s, want %s", src, got, want)
		}
	}
}

func TestResults(t *testing.T) {
	tr := mk(true, "RunTests+completed", "GitCommit", "EditFile", "GitCommit")
	for src, want := range map[string]string{
		"G(GitCommit → P(RunTests ∧ completed))":               "pass []",
		"G(GitCommit → X(RunTests))":                           "fail [2 4]",
		"G(Deploy → P(RunTests))":                              "not_applicable []",
		"G(Deploy → P(RunTests)) ∧ G(EditFile → P(GitCommit))": "pass []",
		"G(Deploy → P(RunTests)) ∧ G(Rollback → ⊥)":            "not_applicable []",
		"F(Deploy)":               "fail []",
		"G(EditFile → F(Deploy))": "fail [3]",
		"count(GitCommit) ≤ 1":    "fail []",
		"RunTests ∧ X(Deploy)":    "fail []",
	} {
		r := Evaluate(ltl.MustParse(src), tr, nil)
		w := r.Witnesses
		if w == nil {
			w = []int64{}
		}
		if got := fmt.Sprintf("%s %v", r.Outcome, w); got != want {
			t.Errorf("%s: got %s, want %s", src, got, want)
		}
	}
}

// TestAtoms covers each atom of SEMANTICS.md §2 on one action.
func TestAtoms(t *testing.T) {
	pl := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	producer := int64(1)
	events := []schema.Event{
		{Type: schema.TypeRunStart, Start: &schema.RunStart{HighStakesPaths: []string{"payments/"}}},
		{Type: schema.TypeAction, Action: &schema.Action{ID: 1, Type: "StateSpaceAnalysis", Category: "reasoning",
			Status: "completed", Rationale: "needed", Label: "Decompose the Step function",
			Request: pl(map[string]any{"path": "payments/step.py"}), Outputs: []string{"d1", "c1"},
			Extra: map[string]json.RawMessage{"flags": pl([]string{"needs_review"})},
			Artifacts: []schema.Artifact{
				{ID: "d1", Type: "StateSpaceAnalysisResult", ProducerActionID: &producer,
					Payload: pl(map[string]any{"status": "proved", "oracle": map[string]any{"id": "imandrax", "oracle_type": "prover", "evidence_strength": "sat", "specializes": []string{"solver"}}})},
				{ID: "c1", Type: "ConformanceResult", ProducerActionID: &producer,
					Payload: pl(map[string]any{"status": "passed", "reference": "ref:atlas:mifir-rts22-art4@3"})},
			}}},
	}
	for i := range events {
		events[i].V, events[i].RunID, events[i].Seq, events[i].TS = 1, "t", uint64(i+1), time.Unix(0, 0)
	}
	tr := trace.Build("t", events)
	cases := map[string]bool{
		"Decompose": true, "StateSpaceAnalysis": true, "Decomposition": true, "StateSpaceAnalysisResult": true,
		"ConformanceResult": true, "EditFile": false, "VerificationResult": false,
		"Decomposition(proved)": true, "Decomposition(refuted)": false, "ConformanceResult(passed)": true,
		"ConformanceResult(proved)": false, "Decompose(completed)": true,
		"reasoning": true, "gateway": false, "action": true, "completed": true, "failed": false,
		"proved": true, "passed": true, "sat": false, "refuted": false,
		"rationale ≠ ∅": true, "detail ≠ ∅": false, "detail = ∅": true,
		"high_stakes_path": true, "start_event": true, "end_event": false,
		"strength_at_least(sat)": true, "strength_at_least(proof)": false, "strength_at_least(tests)": true,
		"oracle_type(prover)": true, "oracle_type(solver)": true, "oracle_type(human)": false,
		"produced_by(imandrax)": true, "produced_by(other)": false,
		"conforms_to(ref:atlas:mifir-rts22-art4)": true, "conforms_to(ref:atlas:mifir-rts22-art4@3)": true,
		"conforms_to(ref:atlas:mifir-rts22-art4@2)": false, "conforms_to(ref:atlas:other)": false,
		"decompose_the_step": true, "needs_review": true, "deploy": false, "state_space_analysis": true,
	}
	for src, want := range cases {
		if got := HoldsAt(ltl.MustParse(src), tr, nil, 0); got != want {
			t.Errorf("%s = %v, want %v", src, got, want)
		}
	}
	// A user predicate, and a reasoner restriction.
	opts := &Options{Predicates: map[string]ltl.Formula{"careful": ltl.MustParse("rationale ≠ ∅ ∧ reasoning")}}
	if !HoldsAt(ltl.MustParse("careful"), tr, opts, 0) {
		t.Error("predicate careful")
	}
	if HoldsAt(ltl.MustParse("proved"), tr, &Options{Reasoner: "other"}, 0) {
		t.Error("reasoner other must not see imandrax's proof")
	}
	if !HoldsAt(ltl.MustParse("proved"), tr, &Options{Reasoner: "prover"}, 0) {
		t.Error("reasoner prover must see its own proof")
	}
	if HoldsAt(ltl.MustParse("high_stakes_path"), tr, &Options{HighStakesPaths: []string{"*.go"}}, 0) != true {
		t.Error("trace-level high_stakes_paths must still count with configured ones")
	}
	sel := &Selector{ActionType: "Decompose", PathPattern: "payments/*.py", ArtifactType: "Decomposition"}
	if !sel.Matches(tr.Positions[0]) {
		t.Error("selector must match")
	}
	if (&Selector{Category: "gateway"}).Matches(tr.Positions[0]) {
		t.Error("category selector must not match")
	}
}

func TestAppliesWhen(t *testing.T) {
	tr := mk(true, "EditFile@a.py", "GitCommit")
	f := ltl.MustParse("G(EditFile → ⊤)")
	if r := Evaluate(f, tr, &Options{AppliesWhen: &Selector{ActionType: "Deploy"}}); r.Outcome != NotApplicable {
		t.Errorf("applies_when not matched: %s", r.Outcome)
	}
	if r := Evaluate(f, tr, &Options{AppliesWhen: &Selector{ActionType: "GitCommit"}}); r.Outcome != Pass {
		t.Errorf("applies_when matched: %s", r.Outcome)
	}
	if !slices.Equal(Evaluate(ltl.MustParse("G(¬GitCommit)"), tr, &Options{AppliesWhen: &Selector{ActionType: "Deploy"}}).Witnesses, []int64{2}) {
		t.Error("a failing rule fails whatever applies_when says")
	}
}
