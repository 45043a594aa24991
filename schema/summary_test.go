package schema

import (
	"strings"
	"testing"
)

func TestSummaryFold(t *testing.T) {
	f, err := NewSummaryFold([]RuleManifestEntry{{ID: "a", Mode: ModeObserve, Text: "G p"}, {ID: "b", Mode: ModeDeny, Text: "G q"}})
	if err != nil {
		t.Fatal(err)
	}
	evs := []Event{{V: 1, RunID: "r1", Seq: 1, Type: TypeRunStart}, {V: 1, RunID: "r1", Seq: 2, Type: TypeRunFinish}}
	stream := []VerdictEvent{
		{RunID: "r1", Seq: 1, Rule: RuleRef{ID: "a"}, Status: StatusPending, Leaning: LeaningViolate},
		{RunID: "r1", Seq: 2, Rule: RuleRef{ID: "a"}, Status: StatusViolated},
	}
	col, err := f.Add(TraceManifestEntry{ID: "t1", RunID: "r1", Verdicts: "t1.verdicts.jsonl"}, evs, stream, nil)
	if err != nil {
		t.Fatal(err)
	}
	if col[0] != StatusViolated || col[1] != StatusSatisfied {
		t.Fatalf("column %v: the last verdict wins, a rule without verdicts is satisfied", col)
	}
	s := f.Summary()
	if s.Traces[0].Events != 2 || s.Traces[0].Outcome != OutcomeCompleted || s.Matrix.Results != nil {
		t.Errorf("summary %+v", s)
	}
	if s.Counts[StatusViolated] != 1 || s.Counts[StatusSatisfied] != 1 || !strings.HasPrefix(s.ContentHash, "sha256:") {
		t.Errorf("counts %v, hash %s", s.Counts, s.ContentHash)
	}
	if _, err := f.Add(TraceManifestEntry{ID: "t1", RunID: "r1"}, evs, nil, nil); err == nil {
		t.Error("a taken trace id was accepted")
	}
	bad := []VerdictEvent{{RunID: "r1", Rule: RuleRef{ID: "zz"}, Status: StatusViolated}}
	if _, err := f.Add(TraceManifestEntry{ID: "t2", RunID: "r1"}, evs, bad, nil); err == nil || !strings.Contains(err.Error(), `rule "zz", which is not checked`) {
		t.Errorf("an unknown rule: %v", err)
	}
	if len(f.Summary().Traces) != 1 {
		t.Error("a refused trace was recorded")
	}
	if _, err := NewSummaryFold([]RuleManifestEntry{{ID: "a"}, {ID: "a"}}); err == nil {
		t.Error("a rule listed twice was accepted")
	}
}
