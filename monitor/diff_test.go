package monitor

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

var (
	diffCases = flag.Int("diff.cases", 0, "formula × run cases for each differential test (0: 20,000, or 2,000 under the race detector)")
	diffSeed  = flag.Uint64("diff.seed", 0, "seed of the differential tests (0: a new one each run, printed)")
)

// diffCaseCount is the number of cases each differential test runs.
func diffCaseCount() int {
	switch {
	case *diffCases > 0:
		return *diffCases
	case raceEnabled:
		return 2_000
	}
	return 20_000
}

// diffSeedValue is the seed of this run: -diff.seed, or a fresh one, so that
// every run of the suite tries new cases (the seed is printed to rerun them).
var diffSeedValue = sync.OnceValue(func() uint64 {
	if *diffSeed != 0 {
		return *diffSeed
	}
	return rand.Uint64()>>1 | 1
})

// TestDifferential checks the incremental monitor against the reference
// evaluator on random formulas (every operator, nested, scoped and
// structural) and random runs: after every event at which no position is
// open, the folded verdict stream must give the reference evaluator's value
// on that prefix (satisfied ↔ pass, violated ↔ fail, pending ↔ its
// leaning), and the final status must equal the reference result on the
// whole run (unresolved runs: the leaning).
func TestDifferential(t *testing.T) {
	seed, cases := diffSeedValue(), diffCaseCount()
	t.Logf("differential: %d cases, seed %d (rerun with -diff.seed=%d)", cases, seed, seed)
	r := rand.New(rand.NewPCG(seed, 7))
	cfg := gen.FormulaConfig{MaxDepth: 4, Monitorable: true, Structural: true, Scoped: true}
	slim := 0
	for c := range cases {
		f := gen.Formula(r, cfg)
		if actionReads(f, nil) == readsOutputs {
			slim++
		}
		events := gen.Run(r, fmt.Sprintf("run-%d", c), gen.RunConfig{MaxActions: 8})
		if msg := diffOne(f, events); msg != "" {
			t.Fatalf("case %d (seed %d, rerun with -diff.seed=%d): %s\nformula: %s\nevents:\n%s", c, seed, seed, msg, ltl.Print(f), dump(events))
		}
	}
	// The slim output index (positions dropped) must be exercised too.
	t.Logf("%d of %d cases read the actions only through their outputs", slim, cases)
	if cases >= 1000 && slim < cases/100 {
		t.Errorf("only %d of %d cases exercise the slim output index", slim, cases)
	}
}

// diffOne runs one case and describes the first disagreement ("" if none).
func diffOne(f ltl.Formula, events []schema.Event) string {
	text := ltl.Print(f)
	rule, probs := ruleset.FromFormula("r", text)
	if probs != nil {
		return "generated formula does not load: " + probs.Error()
	}
	set := &ruleset.Set{Rules: []*ruleset.Rule{rule}}
	eng, errs := NewEngine(set)
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
		if run.b.Open() {
			continue
		}
		if run.Ended() {
			break
		}
		prefix := trace.Build("r", events[:i+1])
		want := eval.Evaluate(f, prefix, &eval.Options{}).Outcome != eval.Fail
		got := status == schema.StatusSatisfied || status == schema.StatusPending && leaning == schema.LeaningSatisfy
		if status == schema.StatusSatisfied && len(prefix.Positions) == 0 {
			continue // nothing evaluated yet: the implicit initial status
		}
		if got != want {
			return fmt.Sprintf("after event %d: monitor says %s/%s, reference on the prefix says %v", events[i].Seq, status, leaning, want)
		}
	}
	if !run.Ended() {
		for _, v := range run.End() {
			status, leaning = v.Status, v.Leaning
		}
	}
	whole := trace.Build("r", events)
	ref := eval.Evaluate(f, whole, &eval.Options{})
	res := run.Results()[0]
	if (ref.Outcome == eval.Fail) != (res.Outcome == eval.Fail) || ref.Outcome != res.Outcome {
		return fmt.Sprintf("final outcome: monitor %s, reference %s", res.Outcome, ref.Outcome)
	}
	if res.Status != status && !(status == schema.StatusSatisfied && res.Status == schema.StatusSatisfied) {
		return fmt.Sprintf("folded stream ends %s but Results says %s", status, res.Status)
	}
	closed := whole.End != nil && whole.End.Type == schema.TypeRunFinish
	switch status {
	case schema.StatusViolated:
		if ref.Outcome != eval.Fail {
			return "monitor violated, reference " + string(ref.Outcome)
		}
	case schema.StatusSatisfied:
		if ref.Outcome == eval.Fail {
			return "monitor satisfied, reference fail"
		}
	case schema.StatusUnresolved:
		if closed {
			return "unresolved after run.finish"
		}
	case schema.StatusPending:
		return "still pending after the run ended"
	}
	return ""
}

func dump(events []schema.Event) string {
	out := ""
	for _, e := range events {
		b, _ := json.Marshal(e)
		out += string(b) + "\n"
	}
	return out
}
