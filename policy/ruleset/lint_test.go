package ruleset

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/schema"
)

// TestLint: a name that is probably a typo is warned about at its place,
// with the closest known name; names the traces use, predicates, built-in
// atoms and the extra names are not.
func TestLint(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.yaml")
	text := `predicates:
  risky: 'riskLevel = "high"'
rules:
  - id: typo
    formula: G(GitComit → P(RunTest ∧ completd))
  - id: fine
    formula: G(EditFile ∧ risky ∧ high_stakes_path → P_chain(VerificationResult(proved)) ∨ hotfix ∨ std_check)
  - id: custom
    formula: G(DeployCanary → P(CanaryBake))
  - id: quoted
    formula: "G(EditFile → P(ReadFlie))"
`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	set, probs := Load(file)
	if probs != nil {
		t.Fatal(probs)
	}
	var vocab Vocabulary
	vocab.Learn([]schema.Event{
		{Type: schema.TypeAction, Action: &schema.Action{ID: 1, Type: "DeployCanary", Extra: map[string]json.RawMessage{"flags": json.RawMessage(`["hotfix"]`)}}},
		{Type: schema.TypeArtifact, Artifact: &schema.Artifact{ID: "a", Type: "CanaryBake"}},
	})
	var got []string
	for _, w := range set.Lint(vocab, "std_check") {
		got = append(got, strings.TrimPrefix(w.Error(), dir+"/"))
	}
	want := []string{
		"r.yaml:5:16: rule typo: unknown-name: type GitComit is not known (not a type of the trace format or of the traces given); did you mean GitCommit?",
		"r.yaml:5:29: rule typo: unknown-name: type RunTest is not known (not a type of the trace format or of the traces given); did you mean RunTests?",
		"r.yaml:5:39: rule typo: unknown-name: atom completd is not known (not built in, a predicate, or a flag of the traces given): it is read as a text match; did you mean completed?",
		"r.yaml:11:30: rule quoted: unknown-name: type ReadFlie is not known (not a type of the trace format or of the traces given); did you mean ReadFile?",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := set.Lint(Vocabulary{}); len(w) != 8 {
		t.Errorf("without the traces' vocabulary and the extra names: %d warnings, want 8:\n%v", len(w), w)
	}
}
