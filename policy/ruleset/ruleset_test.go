package ruleset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/policy/ltl"
)

func TestLoadShapes(t *testing.T) {
	set, probs := Load("testdata/gallery.json", "testdata/object.json", "testdata/list.json", "testdata/rules.yaml")
	if probs != nil {
		t.Fatal(probs)
	}
	var ids []string
	for _, r := range set.Rules {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, " "); got != "tests_before_commit reasoning_required_for_high_stakes a b no_risky_edits tests_eventually" {
		t.Fatalf("rules %s", got)
	}
	g := set.Rules[0]
	if g.Reasoner != "imandrax" || g.AppliesWhen == nil || g.AppliesWhen.ActionType != "GitCommit" || g.Level != ltl.PureTemporal || g.Severity != "error" {
		t.Errorf("gallery rule %+v", g)
	}
	if g.Line != 1 || g.File != "testdata/gallery.json" {
		t.Errorf("gallery rule at %s:%d", g.File, g.Line)
	}
	o := set.Rules[1]
	if o.Level != ltl.ScopedTemporal || o.AppliesWhen.PathPattern != "payments/" {
		t.Errorf("policy object %+v", o)
	}
	if set.Enforce || set.Enforced(set.Rules[4]) != Deny || set.Enforced(set.Rules[5]) != Suspend || set.Enforced(set.Rules[2]) != Observe {
		t.Errorf("modes: enforce %v, %s %s %s", set.Enforce, set.Enforced(set.Rules[4]), set.Enforced(set.Rules[5]), set.Enforced(set.Rules[2]))
	}
	if len(set.Opts.Predicates) != 2 || len(set.Opts.HighStakesPaths) != 1 {
		t.Errorf("options %+v", set.Opts)
	}
	if o := set.Options(g); o.Reasoner != "imandrax" || len(o.Predicates) != 2 {
		t.Errorf("rule options %+v", o)
	}
}

func TestLoadProblems(t *testing.T) {
	_, probs := Load("testdata/bad.yaml")
	want := []string{
		"testdata/bad.yaml:3:20: rule syntax: syntax: expected a formula, found '∧'",
		"testdata/bad.yaml:4:5: rule level: level: declared language_level pure_temporal, but the formula needs scoped_temporal",
		"testdata/bad.yaml:9:11: rule mode: bad-value: mode \"explode\" is not one of observe, deny, suspend, abort",
		"testdata/bad.yaml:10:5: missing-field: a rule needs an id (or policy_id)",
		"testdata/bad.yaml:13:5: rule unknownkey: unknown-field: unknown field \"language_levle\": did you mean \"language_level\"?",
		"testdata/bad.yaml:14:5: rule syntax: duplicate-id: rule id already defined at testdata/bad.yaml:2",
		"testdata/bad.yaml:17:33: rule temporal_in_quantifier: unsupported: temporal operator F inside a quantifier body is not supported: those are evaluated at a single position",
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.Error())
	}
	if want := "    G(a ∧ ∧ b)\n          ^"; probs[0].Excerpt != want {
		t.Errorf("excerpt %q, want %q", probs[0].Excerpt, want)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadDirectoryAndErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", "rules:\n  - {id: b, formula: F(a)}\n")
	write("a.json", `{"id": "a", "formula": "G(a)"}`)
	write("notes.txt", "ignored")
	write("broken.json", `{"id": "x", "formula": `)
	write("cyclic.yaml", "predicates:\n  p: q\n  q: p\nrules: []\n")
	write("future.yaml", "version: 2\nrules: []\n")
	write("typo.yaml", "enforec: true\nrules: []\n")
	set, probs := Load(dir)
	if len(set.Rules) != 2 || set.Rules[0].ID != "a" || set.Rules[1].ID != "b" {
		t.Errorf("rules %v", set.Rules)
	}
	text := probs.Error()
	for _, want := range []string{"broken.json:1:", "cyclic.yaml", "defined in terms of itself", "future.yaml:1:1: version: rules file version 2 is not supported by this build (supports 1)",
		`typo.yaml:1:1: unknown-field: unknown field "enforec": did you mean "enforce"?`} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if _, probs := Load(filepath.Join(dir, "missing.yaml")); probs == nil || !strings.Contains(probs.Error(), "unreadable") {
		t.Errorf("missing file: %v", probs)
	}
}

func TestFromFormula(t *testing.T) {
	r, probs := FromFormula("x", "G(a → F b)")
	if probs != nil || r.Text != "G(a → F(b))" || r.Mode != Observe {
		t.Errorf("%+v %v", r, probs)
	}
	_, probs = FromFormula("y", "G(")
	if probs == nil || probs[0].Error() != "--formula:1:3: rule y: syntax: expected a formula, found end of formula" {
		t.Errorf("%v", probs)
	}
}

// TestEnforceScopedToFile: enforce: true in one rules file puts the modes of
// that file's rules in force, and of no other file's; the set's Enforce (the
// --enforce flag) puts every mode in force.
func TestEnforceScopedToFile(t *testing.T) {
	dir := t.TempDir()
	on := filepath.Join(dir, "on.yaml")
	off := filepath.Join(dir, "off.yaml")
	gallery := filepath.Join(dir, "gallery.json")
	for name, text := range map[string]string{
		on:      "enforce: true\nrules:\n  - {id: on, formula: G(a), mode: deny}\n",
		off:     "rules:\n  - {id: off, formula: G(b), mode: abort}\n",
		gallery: `{"id": "g", "formula": "G(c)", "mode": "suspend"}`,
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, order := range [][]string{{on, off, gallery}, {gallery, off, on}} {
		set, probs := Load(order...)
		if probs != nil {
			t.Fatal(probs)
		}
		got := map[string]Mode{}
		for _, r := range set.Rules {
			got[r.ID] = set.Enforced(r)
		}
		if got["on"] != Deny || got["off"] != Observe || got["g"] != Observe {
			t.Errorf("load order %v: enforced modes %v, want on=deny, off and g observe", order, got)
		}
		set.Enforce = true
		if set.Enforced(set.Rules[0]) == Observe || set.Enforced(set.Rules[1]) == Observe || set.Enforced(set.Rules[2]) == Observe {
			t.Errorf("--enforce leaves a rule observing")
		}
	}
}

// TestGalleryMetadata: gallery files carry catalogue metadata that
// evaluation does not read; it is kept on the rule and is never a problem.
// A member no catalogue is known to use is a note (for a strict check).
func TestGalleryMetadata(t *testing.T) {
	set, probs := Load("../../testdata/corpus/policies")
	if probs != nil {
		t.Fatal(probs)
	}
	if len(set.Rules) != 3 {
		t.Fatalf("%d rules, want 3", len(set.Rules))
	}
	every := []string{"category", "tags", "pack", "domain", "author", "date_added", "downloads", "source",
		"group", "tier", "fix_domain", "governance_state", "reference_model"}
	for _, r := range set.Rules {
		for _, k := range every {
			if _, ok := r.Metadata[k]; !ok {
				t.Errorf("rule %s: metadata lacks %q: %v", r.ID, k, r.Metadata)
			}
		}
		for _, k := range []string{"id", "formula", "severity", "language_level", "applies_when", "reasoner"} {
			if _, ok := r.Metadata[k]; ok {
				t.Errorf("rule %s: %q, which loading reads, is in the metadata", r.ID, k)
			}
		}
	}
	byID := map[string]*Rule{}
	for _, r := range set.Rules {
		byID[r.ID] = r
	}
	author, _ := byID["tests-before-commit"].Metadata["author"].(map[string]any)
	if author["github"] != "ada-example" || byID["tests-before-commit"].Metadata["downloads"] != 1843 {
		t.Errorf("metadata values: %v", byID["tests-before-commit"].Metadata)
	}
	if p := byID["proof-before-high-stakes-edit"]; p.Reasoner != "imandrax" || p.AppliesWhen == nil || p.Level != ltl.ScopedTemporal {
		t.Errorf("read fields lost: %+v", p)
	}
	if len(set.Notes) != 1 || set.Notes[0].Error() != `../../testdata/corpus/policies/goals-target-models.json:22:5: rule goals-target-models: metadata: field "featured" is not read by ponens: kept as metadata` {
		t.Errorf("notes: %v", set.Notes)
	}
}

// TestMisspelledFields: a near miss of a field loading reads is an error
// naming the field meant, not metadata.
func TestMisspelledFields(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.json")
	text := "[\n" +
		`{"id": "a", "fromula": "G(a)"},` + "\n" +
		`{"id": "b", "formula": "G(b)", "language_levle": "structural"},` + "\n" +
		`{"id": "c", "formula": "G(c)", "Severity": "error", "domain": "x"}` + "\n]"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	set, probs := Load(file)
	want := []string{
		file + `:2:13: rule a: unknown-field: unknown field "fromula": did you mean "formula"?`,
		file + `:3:32: rule b: unknown-field: unknown field "language_levle": did you mean "language_level"?`,
		file + `:4:32: rule c: unknown-field: unknown field "Severity": did you mean "severity"?`,
	}
	var got []string
	for _, p := range probs {
		got = append(got, p.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(set.Rules) != 0 {
		t.Errorf("problems\n got:\n%s\nwant:\n%s\nrules %d", strings.Join(got, "\n"), strings.Join(want, "\n"), len(set.Rules))
	}
}

func TestClosest(t *testing.T) {
	known := []string{"formula", "language_level", "id", "severity", "GitCommit", "RunTests", "completed"}
	for word, want := range map[string]string{
		"fromula": "formula", "language_levle": "language_level", "GitComit": "GitCommit",
		"completd": "completed", "RunTest": "RunTests", "formula": "", "ix": "", "domain": "", "tier": "", "source": "",
	} {
		if got := Closest(word, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestTracePolicies: a reference trace given as rules yields its policy
// objects; a bare name is skipped with a reason; traces embedding the same
// policy share one rule, and a policy id embedded with another formula is
// a duplicate.
func TestTracePolicies(t *testing.T) {
	dir := t.TempDir()
	write := func(name, policies string) string {
		p := filepath.Join(dir, name)
		text := `{"trace_id": "` + name + `", "actions": [], "policies": ` + policies + `}`
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tbc := `{"policy_id": "tbc", "name": "Tests before commit", "severity": "error", "scope": "trace", "kind": "temporal", "formula": "G(GitCommit → P(RunTests))"}`
	a := write("a.json", `[`+tbc+`, "house-style"]`)
	b := write("b.json", `[`+tbc+`]`)
	c := write("c.json", `[{"policy_id": "tbc", "formula": "G(GitCommit → P(Verify))"}]`)
	none := write("none.json", `["house-style"]`)
	set, probs := Load(a, b)
	if probs != nil || len(set.Rules) != 1 || set.Rules[0].ID != "tbc" || set.Rules[0].Metadata["kind"] != "temporal" {
		t.Fatalf("a, b: %v %+v", probs, set.Rules)
	}
	if len(set.Skipped) != 1 || set.Skipped[0].Error() != a+`:1:205: rule house-style: name-only: policies[1] names a policy without its formula: not checked (give its policy file with --rules)` {
		t.Errorf("skipped: %v", set.Skipped)
	}
	if _, probs := Load(a, c); len(probs) != 1 || probs[0].Code != "duplicate-id" {
		t.Errorf("a, c: %v", probs)
	}
	if _, probs := Load(none); len(probs) != 1 || probs[0].Code != "no-policies" {
		t.Errorf("none: %v", probs)
	}
}
