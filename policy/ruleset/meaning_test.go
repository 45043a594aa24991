package ruleset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadText loads one rules file with the given content.
func loadText(t *testing.T, name, text string) *Set {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	set, probs := Load(p)
	if probs != nil {
		t.Fatal(probs)
	}
	return set
}

func meaningOf(t *testing.T, set *Set, id string) string {
	t.Helper()
	for _, r := range set.Rules {
		if r.ID == id {
			return set.Meaning(r)
		}
	}
	t.Fatalf("no rule %s", id)
	return ""
}

const baseRules = `version: 1
predicates:
  risky: 'riskLevel = "high"'
  risky_edit: 'EditFile ∧ risky'
rules:
  - id: no_risky_edits
    description: No risky edit.
    formula: G(¬risky_edit)
    mode: deny
  - id: tests_eventually
    formula: F(RunTests)
`

func TestMeaning(t *testing.T) {
	base := loadText(t, "a.yaml", baseRules)
	same := func(what, text string, id string, want bool) {
		t.Helper()
		other := loadText(t, "b.yaml", text)
		if got := meaningOf(t, base, id) == meaningOf(t, other, id); got != want {
			t.Errorf("%s: same meaning %v, want %v", what, got, want)
		}
	}
	same("another file, description, mode and layout", strings.NewReplacer(
		"description: No risky edit.", "description: Something else.", "mode: deny", "mode: observe",
		"formula: G(¬risky_edit)", "formula: 'G ( ! risky_edit )'").Replace(baseRules), "no_risky_edits", true)
	same("another formula", strings.Replace(baseRules, "F(RunTests)", "F(GitCommit)", 1), "tests_eventually", false)
	same("a predicate used through another predicate", strings.Replace(baseRules, `riskLevel = "high"'`, `riskLevel = "critical"'`, 1), "no_risky_edits", false)
	same("a predicate the rule does not use", strings.Replace(baseRules, `riskLevel = "high"'`, `riskLevel = "critical"'`, 1), "tests_eventually", true)
	same("high-stakes paths, for a rule that does not read them", "high_stakes_paths: [payments/]\n"+baseRules, "tests_eventually", true)
	withHighStakes := strings.Replace(baseRules, "F(RunTests)", "F(RunTests ∧ high_stakes_path)", 1)
	base = loadText(t, "a.yaml", withHighStakes)
	same("high-stakes paths, for a rule that reads them", "high_stakes_paths: [payments/]\n"+withHighStakes, "tests_eventually", false)
}

func TestMeaningPolicyMD(t *testing.T) {
	data, err := os.ReadFile("../../examples/rules/POLICY.md")
	if err != nil {
		t.Fatal(err)
	}
	load := func(text string) *Set {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "POLICY.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		set, probs := Load(dir)
		if probs != nil {
			t.Fatal(probs)
		}
		return set
	}
	base := load(string(data))
	if len(base.Rules) < 2 {
		t.Fatal("the example policy needs two rules")
	}
	id, other := base.Rules[0].ID, base.Rules[1].ID
	reworded := load(strings.Replace(string(data), "reason:", "reason: (reworded)", 1))
	if meaningOf(t, base, id) != meaningOf(t, reworded, id) {
		t.Error("a reworded reason changed a POLICY.md rule's meaning")
	}
	if meaningOf(t, base, id) == meaningOf(t, base, other) {
		t.Error("two rules of one policy have the same meaning")
	}
	firstChanged := load(strings.Replace(string(data), "value: .env }", "value: .secret }", 1))
	if meaningOf(t, base, id) == meaningOf(t, firstChanged, id) {
		t.Error("a changed condition left the rule's meaning alone")
	}
	if meaningOf(t, base, other) == meaningOf(t, firstChanged, other) {
		t.Error("a change to another rule of the policy left the meaning alone (precedence is part of it)")
	}
}

func TestRenamed(t *testing.T) {
	set := loadText(t, "a.yaml", baseRules)
	r := set.Renamed(map[string]string{"tests_eventually": "tests_eventually@2"})
	if r.Rules[1].ID != "tests_eventually@2" || set.Rules[1].ID != "tests_eventually" || r.Rules[0] != set.Rules[0] {
		t.Errorf("renamed %s, original %s", r.Rules[1].ID, set.Rules[1].ID)
	}
}

// TestLoadThroughSymlink: a rules directory named by a symbolic link loads
// the files of the directory it points to.
func TestLoadThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(baseRules), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "rules")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	set, probs := Load(link)
	if probs != nil || len(set.Rules) != 2 {
		t.Fatalf("loaded %d rules through the link, problems %v", len(set.Rules), probs)
	}
	if want := filepath.Join(link, "r.yaml"); set.Rules[0].File != want {
		t.Errorf("rule from %s, want %s (as named)", set.Rules[0].File, want)
	}
}

// TestLoadRefusesSameNamedPolicies: the --rules of decide and serve load
// the project's POLICY.md and a skill's with the same name as policy list
// does: the second is refused, naming both files.
func TestLoadRefusesSameNamedPolicies(t *testing.T) {
	wd := filepath.Join("..", "policymd", "testdata", "discover", "shadow")
	skill := filepath.Join(wd, ".claude", "skills", "helper", "POLICY.md")
	set, probs := Load(filepath.Join(wd, "POLICY.md"), skill)
	if len(probs) != 1 || probs[0].Code != "shadowed-policy" || probs[0].File != skill || !strings.Contains(probs[0].Msg, filepath.Join(wd, "POLICY.md")) {
		t.Fatalf("problems %v, want one shadowed-policy naming both files", probs)
	}
	if len(set.Policies) != 1 || set.Policies[0].Description != "the project's policy" {
		t.Errorf("policies in force: %+v", set.Policies)
	}
}
