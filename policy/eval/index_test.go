package eval

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/trace"
)

// TestIndexesChangeNothing: the output index and the running counts give
// the answers a plain scan gives, at every position of random runs, both on
// the whole run and on prefix views.
func TestIndexesChangeNothing(t *testing.T) {
	formulas := []string{
		"∀ input ∈ inputs(a) . ∃! b . b < a ∧ input ∈ outputs(b)",
		"∃ b . input_free ∨ a.id ∈ outputs(b)",
		"∃! b . \"art3\" ∈ outputs(b)",
		"∃ b . Art1 ∈ outputs(b)", // a type name: compared case-insensitively
		"∀ t ∈ {Art2, \"art1\"} . ∃! b . t ∈ outputs(b)",
		"∃ b . b.type = Verify ∧ target_artifact_id ∈ outputs(b)",
		"count(EditFile) ≤ 2",
		"G(EditFile → count(EditFile ∧ completed) ≤ 1)",
		"G(count(VerificationResult(proved)) < count(action))",
	}
	r := rand.New(rand.NewPCG(5, 5))
	for c := range 400 {
		events := gen.Run(r, fmt.Sprint(c), gen.RunConfig{MaxActions: 12})
		for _, src := range formulas {
			f := ltl.MustParse(src)
			for k := range len(events) + 1 {
				tr := trace.Build("r", events[:k])
				for i := range len(tr.Positions) + 1 {
					if i == len(tr.Positions) && i > 0 {
						break
					}
					useIndexes = true
					fast := HoldsAt(f, tr, nil, i)
					useIndexes = false
					slow := HoldsAt(f, tr, nil, i)
					useIndexes = true
					if fast != slow {
						t.Fatalf("run %d prefix %d position %d: %s is %v with indexes, %v without", c, k, i, src, fast, slow)
					}
				}
			}
		}
	}
}
