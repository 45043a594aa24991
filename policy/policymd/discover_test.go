package policymd

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestDiscover is seed 004 §4 over a fixture tree with every kind of
// location, a skill directory without SKILL.md (ignored), a nested
// POLICY.md too deep to count, and a POLICY.md outside every location.
func TestDiscover(t *testing.T) {
	wd := filepath.Join("testdata", "discover", "wd")
	locs, err := Discover(wd, DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := func(rel string) string { return filepath.Join(wd, filepath.FromSlash(rel)) }
	want := []Location{
		{Path: j("POLICY.md"), Origin: OriginRoot},
		{Path: j(".policies/POLICY.md"), Origin: OriginPolicyDir},
		{Path: j(".devin/policies/POLICY.md"), Origin: OriginPolicyDir},
		{Path: j(".policies/alpha/POLICY.md"), Origin: OriginPolicySub},
		{Path: j(".policies/beta/POLICY.md"), Origin: OriginPolicySub},
		{Path: j(".devin/policies/gamma/POLICY.md"), Origin: OriginPolicySub},
		{Path: j(".sidian/policies/delta/POLICY.md"), Origin: OriginPolicySub},
		{Path: j(".devin/skills/deploy/POLICY.md"), Origin: OriginSkill, Skill: "deploy"},
		{Path: j(".sidian/skills/zeta/POLICY.md"), Origin: OriginSkill, Skill: "zeta"},
		{Path: j(".claude/skills/a-first/POLICY.md"), Origin: OriginSkill, Skill: "a-first"},
		{Path: j(".claude/skills/review/POLICY.md"), Origin: OriginSkill, Skill: "review"},
	}
	if !reflect.DeepEqual(locs, want) {
		t.Errorf("Discover:\n%s\nwant\n%s", fmtLocs(locs), fmtLocs(want))
	}
}

func fmtLocs(locs []Location) string {
	var b strings.Builder
	for _, l := range locs {
		b.WriteString("  " + l.Path + " " + string(l.Origin) + " " + l.Skill + "\n")
	}
	return b.String()
}

func TestDiscoverOptions(t *testing.T) {
	wd := filepath.Join("testdata", "discover", "wd")
	locs, err := Discover(wd, DiscoverOptions{PolicyDirs: []string{".sidian/policies"}, SkillDirs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Location{
		{Path: filepath.Join(wd, "POLICY.md"), Origin: OriginRoot},
		{Path: filepath.Join(wd, ".sidian", "policies", "delta", "POLICY.md"), Origin: OriginPolicySub},
	}
	if !reflect.DeepEqual(locs, want) {
		t.Errorf("custom dirs:\n%s", fmtLocs(locs))
	}
	// The same directory twice does not list its files twice.
	locs, _ = Discover(wd, DiscoverOptions{PolicyDirs: []string{".policies", "./.policies"}, SkillDirs: []string{}})
	if len(locs) != 4 {
		t.Errorf("repeated dir:\n%s", fmtLocs(locs))
	}
	// A missing working directory finds nothing and is no error.
	locs, err = Discover(filepath.Join(t.TempDir(), "nope"), DiscoverOptions{})
	if len(locs) != 0 || err != nil {
		t.Errorf("missing wd: %v %v", locs, err)
	}
}

// TestLoad: skill-attached policies get scope skill and appliesTo
// [<skill>]; the load order is the discovery order.
func TestLoad(t *testing.T) {
	pols, err := Load(filepath.Join("testdata", "discover", "wd"), DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pols {
		names = append(names, p.Name)
	}
	want := []string{"root", "policies-root", "devin-root", "alpha", "beta", "gamma", "delta", "deploy-guard", "zeta", "a-first", "review"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names %v\nwant  %v", names, want)
	}
	deploy := pols[7]
	if deploy.Scope != ScopeSkill || !reflect.DeepEqual(deploy.AppliesTo, []string{"deploy"}) || deploy.Origin != OriginSkill || deploy.Skill != "deploy" {
		t.Errorf("skill policy: scope %s appliesTo %v origin %s skill %s", deploy.Scope, deploy.AppliesTo, deploy.Origin, deploy.Skill)
	}
	if pols[0].Scope != ScopeProject || !reflect.DeepEqual(pols[0].AppliesTo, []string{"all"}) {
		t.Errorf("root policy: %+v", pols[0])
	}
	// Skill rules only apply to the skill's worker or specialist (the root
	// policy's allow-everything rule comes first and wins the tie).
	e := NewEngine(pols)
	matched := func(in *Intent) []string {
		var ids []string
		for _, m := range e.Matches(in) {
			ids = append(ids, m.Rule.ID)
		}
		return ids
	}
	if got, want := matched(&Intent{Capability: "deploy.prod", Specialist: "deploy"}), []string{"root#1", "deploy-guard#1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deploy specialist matches %v, want %v", got, want)
	}
	if got, want := matched(&Intent{Capability: "deploy.prod", WorkerID: "coder"}), []string{"root#1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("other worker matches %v, want %v", got, want)
	}
}

// TestLoadDuplicateNames: the later same-named policy replaces the earlier.
func TestLoadDuplicateNames(t *testing.T) {
	wd := filepath.Join("testdata", "discover", "dup")
	pols, err := Load(wd, DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pols) != 2 || pols[0].Name != "other" || pols[1].Name != "same" || pols[1].Description != "the later copy" {
		t.Fatalf("got %d policies: %+v", len(pols), pols)
	}
	if want := []string{filepath.Join(wd, "POLICY.md")}; !reflect.DeepEqual(pols[1].Replaces, want) {
		t.Errorf("Replaces = %v, want %v", pols[1].Replaces, want)
	}
}

// TestLoadInvalid: invalid files are reported with every problem; the valid
// ones are still returned.
func TestLoadInvalid(t *testing.T) {
	wd := filepath.Join("testdata", "discover", "invalid")
	pols, err := Load(wd, DiscoverOptions{})
	if len(pols) != 1 || pols[0].Name != "fine" {
		t.Errorf("valid policies: %+v", pols)
	}
	var ps Problems
	if !errors.As(err, &ps) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	file := filepath.Join(wd, ".policies", "broken", "POLICY.md")
	want := file + `:2:7: bad-value: name "Broken Name" must be kebab-case or snake_case (lower-case letters and digits joined by - or _)
` + file + `:4:5: missing-field: the rule has no capability`
	if err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// TestDiscoverSymlinks: symbolic links to policy and skill directories are
// followed.
func TestDiscoverSymlinks(t *testing.T) {
	wd := t.TempDir()
	real := filepath.Join(wd, "shared")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(real, "POLICY.md"), "---\nname: linked\n---\n")
	writeFile(t, filepath.Join(real, "SKILL.md"), "# skill\n")
	if err := os.MkdirAll(filepath.Join(wd, ".policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(wd, ".claude", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(wd, ".policies", "linked")); err != nil {
		t.Skip("no symlinks:", err)
	}
	if err := os.Symlink(real, filepath.Join(wd, ".claude", "skills", "sk")); err != nil {
		t.Fatal(err)
	}
	locs, err := Discover(wd, DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(locs) != 2 || locs[0].Origin != OriginPolicySub || locs[1].Skill != "sk" {
		t.Errorf("symlinks:\n%s", fmtLocs(locs))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadShadowedProjectPolicy: a skill's POLICY.md with the name of the
// project's policy does not replace it: it is refused, naming both files,
// and the project policy stays in force.
func TestLoadShadowedProjectPolicy(t *testing.T) {
	wd := filepath.Join("testdata", "discover", "shadow")
	pols, err := Load(wd, DiscoverOptions{})
	if len(pols) != 1 || pols[0].Description != "the project's policy" {
		t.Fatalf("loaded %+v, want the project policy only", pols)
	}
	var probs Problems
	skill := filepath.Join(wd, ".claude", "skills", "helper", "POLICY.md")
	if !errors.As(err, &probs) || len(probs) != 1 || probs[0].Code != CodeShadowed || probs[0].File != skill ||
		!strings.Contains(probs[0].Message, filepath.Join(wd, "POLICY.md")) {
		t.Errorf("error %v, want one shadowed-policy problem naming both files", err)
	}
}
