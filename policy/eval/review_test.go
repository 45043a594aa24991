package eval_test

// Review tests: each reproduces a bug found in review (now fixed), so that
// it stays fixed.

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ponens/ponens/policy/eval"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

func reviewEvents(bodies ...schema.Event) []schema.Event {
	for i := range bodies {
		e := &bodies[i]
		e.V, e.RunID, e.Seq = schema.EnvelopeVersion, "r", uint64(i+1)
		e.TS = time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
	}
	return bodies
}

// TestReviewPrefixLookupShadowed: the view of the run as it stood when
// position 0 was sealed must resolve an id (or a name) to the artifact the
// run held then. Trace.Lookup finds the latest artifact with that id and,
// in a view, returns nil when that one arrived after the view's end,
// instead of the earlier one. An artifact re-sent under the same id (a new
// version) thus makes x.type unknown at every earlier position.
func TestReviewPrefixLookupShadowed(t *testing.T) {

	events := reviewEvents(
		schema.Event{Type: schema.TypeRunStart, Start: &schema.RunStart{}},
		schema.Event{Type: schema.TypeArtifact, Artifact: &schema.Artifact{ID: "x", Type: "IMLModel"}},
		schema.Event{Type: schema.TypeAction, Action: &schema.Action{ID: 1, Type: "Verify",
			Extra: map[string]json.RawMessage{"target_artifact_id": json.RawMessage(`"x"`)}}},
		schema.Event{Type: schema.TypeArtifact, Artifact: &schema.Artifact{ID: "x", Type: "SourceCode"}},
		schema.Event{Type: schema.TypeRunFinish, End: &schema.RunEnd{}},
	)
	tr := trace.Build("r", events)
	view := tr.Prefix(tr.Positions[0])
	if a := view.Lookup("x"); a == nil || a.Type != "IMLModel" {
		t.Errorf("Prefix(pos0).Lookup(x) = %v, want the IMLModel the run held at pos0", a)
	}
	f := ltl.MustParse("G(Verify → target_artifact_id.type = IMLModel)")
	if got := eval.Evaluate(f, tr, nil); got.Outcome != eval.Pass {
		t.Errorf("G(Verify → target_artifact_id.type = IMLModel) = %s %v, want pass", got.Outcome, got.Witnesses)
	}
}
