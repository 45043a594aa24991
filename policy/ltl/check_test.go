package ltl

import (
	"errors"
	"strings"
	"testing"
)

// The formulas of seed 000 §4 and SEMANTICS.md, with the level the seed
// gives them.
var seedFormulas = []struct {
	name, src string
	level     Level
}{
	{"tests_before_commit", "G(GitCommit → P(RunTests ∧ completed))", PureTemporal},
	{"research_before_edit", "G(EditFile → P_target(ReadFile ∨ ReadDocumentation ∨ SearchCode ∨ AnalyzeCode))", ScopedTemporal},
	{"reasoning_required_for_high_stakes", "G(EditFile ∧ high_stakes_path → P_chain(VerificationResult(proved ∨ sat) ∨ Decomposition))", ScopedTemporal},
	{"data_flow_integrity", "G(∀ input ∈ inputs(a) → ∃! b . b < a ∧ input ∈ outputs(b))", Structural},
	{"no_open_critical_residuals", "¬∃ r ∈ residuals . r.severity = Critical ∧ r.status = Open", Structural},
	{"reference_integrity", "G(Formalize → target_artifact_id ∈ {a.id | a.type = IMLModel})", Structural},
	{"rationale_on_gateway", "G(gateway → rationale ≠ ∅)", PureTemporal},
	{"since", "G(GitCommit → (¬EditFile S RunTests))", PureTemporal},
	{"since_last", "G(GitCommit → (RunTests S_last EditFile))", PureTemporal},
	{"evidence", "G(Deploy → P(strength_at_least(proof) ∨ conforms_to(ref:atlas:mifir-rts22-art4)))", PureTemporal},
	{"bounded_edits", "count(EditFile) ≤ 20", Structural},
	{"history", "G(GitCommit → H_target(¬failed) ∧ H_chain(completed))", ScopedTemporal},
}

func TestSeedFormulasClassify(t *testing.T) {
	for _, s := range seedFormulas {
		t.Run(s.name, func(t *testing.T) {
			f, err := Parse(s.src)
			if err != nil {
				t.Fatal(err)
			}
			if errs := Check(s.src, f); len(errs) > 0 {
				t.Fatalf("Check: %v", errs)
			}
			if got := Classify(f); got != s.level {
				t.Errorf("level %s, want %s", got, s.level)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct{ src, want string }{
		{"∃ x ∈ artifacts . F(x.type = A)", "1:19: unsupported: temporal operator F inside a quantifier body is not supported: those are evaluated at a single position"},
		{"count(G(a)) > 1", "1:7: unsupported: temporal operator G inside count(…) is not supported: those are evaluated at a single position"},
		{"VerificationResult(P(proved))", "1:20: unsupported: temporal operator P inside a type call VerificationResult(…) is not supported: those are evaluated at a single position"},
		{"x ∈ {y.id | a U b}", "1:13: unsupported: temporal operator U inside a set comprehension is not supported: those are evaluated at a single position"},
		{"strength_at_least(vibes)", "1:1: unknown-strength: strength_at_least(vibes): unknown evidence strength (want one of proof, sat, tests, static_analysis, attested)"},
		{"∀ x ∈ 3 . a", "1:7: bad-domain: the quantifier ranges over 3, which is not a set"},
		{"{a, b} < 3", "1:1: bad-compare: {a, b} cannot be ordered with <"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			f := MustParse(tt.src)
			errs := Check(tt.src, f)
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			if errs[0].Error() != tt.want {
				t.Errorf("\n got %s\nwant %s", errs[0], tt.want)
			}
			if !errors.Is(errs[0], ErrUnsupported) {
				t.Error("not ErrUnsupported")
			}
		})
	}
}

func TestCheckCollectsAll(t *testing.T) {
	src := "(∃ x ∈ artifacts . F(a)) ∧ count(X(b)) > 1 ∧ strength_at_least(vibes)"
	errs := Check(src, MustParse(src))
	if len(errs) != 3 {
		t.Fatalf("want 3 problems, got %v", errs)
	}
	for i := 1; i < len(errs); i++ {
		if errs[i-1].Offset > errs[i].Offset {
			t.Errorf("problems not sorted by position: %v", errs)
		}
	}
}

func TestLevels(t *testing.T) {
	for src, want := range map[string]Level{
		"G(a → F b)":                    PureTemporal,
		"a S b ∧ c S_last d":            PureTemporal,
		"rationale ≠ ∅":                 PureTemporal,
		"rationale = ∅":                 PureTemporal,
		"H_chain(a)":                    ScopedTemporal,
		"label = \"x\"":                 Structural,
		"x ∈ {a}":                       Structural,
		"G(P_target(a) ∧ count(b) > 1)": Structural,
	} {
		if got := Classify(MustParse(src)); got != want {
			t.Errorf("Classify(%s) = %s, want %s", src, got, want)
		}
	}
	if _, err := ParseLevel("temporal"); err == nil || !strings.Contains(err.Error(), "pure_temporal") {
		t.Errorf("ParseLevel error %v", err)
	}
}

func TestPositionIndependent(t *testing.T) {
	for src, want := range map[string]bool{
		"¬∃ r ∈ residuals . r.severity = Critical": true,
		"count(EditFile) ≤ 3":                      true,
		"end_event":                                true,
		"EditFile":                                 false,
		"rationale ≠ ∅":                            false,
		"∃ x ∈ inputs(a) . x.type = T":             false,
		"∃ r ∈ residuals . r.target = target":      false,
		"∃ x ∈ ancestors(derived_from) . ⊤":        false,
		"{x.id | x.type = IMLModel} = ∅":           true,
	} {
		f := MustParse(src)
		if u, ok := f.(*Unary); ok && u.Op == OpNot {
			f = u.X
		}
		if got := PositionIndependent(f); got != want {
			t.Errorf("PositionIndependent(%s) = %v, want %v", src, got, want)
		}
	}
}

func TestTriggers(t *testing.T) {
	for src, want := range map[string]string{
		"G(a → b)":                  "a",
		"G(a ∧ b → F c) ∧ G(d → e)": "(∧ a b) d",
		"G(F a → b)":                "",
		"G(a) ∧ G(b → c)":           "",
		"F(a → b)":                  "",
		"G(end_event → b)":          "",
	} {
		var parts []string
		for _, f := range Triggers(MustParse(src)) {
			parts = append(parts, Sexpr(f))
		}
		if got := strings.Join(parts, " "); got != want {
			t.Errorf("Triggers(%s) = %q, want %q", src, got, want)
		}
	}
}

func TestRunLevelLeaves(t *testing.T) {
	for src, want := range map[string]string{
		"¬∃ r ∈ residuals . r.severity = Critical": "(∃ r residuals (= (. r severity) Critical))",
		"count(EditFile) ≤ 3 ∧ G(count(a) ≤ 1)":    "(≤ (count EditFile) 3)",
		"G(a → end_event) ∧ P(start_event)":        "end_event",
		"EditFile ∨ start_event":                   "start_event",
		"G(EditFile → ¬∃ r ∈ residuals . ⊤)":       "",
	} {
		var got []string
		for f := range RunLevelLeaves(MustParse(src)) {
			got = append(got, Sexpr(f))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("RunLevelLeaves(%s) = %v, want %s", src, got, want)
		}
	}
}

func TestReadsActionsByOutputs(t *testing.T) {
	for src, want := range map[string]bool{
		"G(∀ input ∈ inputs(a) → ∃! b . b < a ∧ input ∈ outputs(b))": true,
		"∃ b . \"art1\" ∈ outputs(b) ∧ a > b":                        true,
		"∃ b . x ∈ outputs(b) ∧ EditFile":                            true, // EditFile is of the current action
		"EditFile":                                                   false,
		"∀ b . b < a ∧ x ∈ outputs(b)":                               false, // ∀ needs every action
		"∃ b . b < a":                                                false, // no output to index by
		"∃ b . x ∈ outputs(b) ∧ b.type = EditFile":                   false, // reads the action
		"∃ b . x ∈ outputs(b) ∧ b = 3":                               false,
		"∃ b . x ∈ outputs(b) ∧ ∃ b . b.type = T":                    false, // b bound again
		"∃ b . b ∈ outputs(b)":                                       false,
		"∃ b . x ∈ outputs(b) ∧ count(EditFile) > 1":                 false,
		"∃ b . x ∈ outputs(b) ∧ ∃ y ∈ actions . ⊤":                   false,
		"∃ b . x ∈ outputs(b) ∧ x ∉ inputs(b)":                       false,
		"∃ x ∈ artifacts . x.type = T":                               false, // does not read the actions
		"(∃ b . x ∈ outputs(b)) ∧ (∃! c . y ∈ outputs(c) ∧ c < a)":   true,
		"∃ b . x ∈ outputs(b) ∧ {y.id | y ∈ outputs(b)} ≠ ∅":         true,
		"∃ b . x ∈ outputs(b) ∧ {b.id | b ∈ artifacts} ≠ ∅":          false,
	} {
		if got := ReadsActionsByOutputs(MustParse(src)); got != want {
			t.Errorf("ReadsActionsByOutputs(%s) = %v, want %v", src, got, want)
		}
	}
}
