package ruleset

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad checks that loading any file never panics, that every problem,
// note and skipped policy names the file, and that every rule loaded has a
// formula that prints, with its metadata free of the fields loading reads.
// The seed corpus (testdata/fuzz/FuzzLoad) holds this package's fixtures,
// the gallery files and traces of the repository's corpus, and broken
// variants of them.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(dir, "policy.json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		set, probs := Load(file)
		for _, list := range []Problems{probs, set.Notes, set.Skipped} {
			for _, p := range list {
				if p.File != file || p.Code == "" || p.Msg == "" {
					t.Fatalf("problem without file, code or message: %#v", p)
				}
			}
		}
		for _, r := range set.Rules {
			if r.Formula == nil || r.Text == "" || r.ID == "" {
				t.Fatalf("rule loaded without id or formula: %+v", r)
			}
			for k := range r.Metadata {
				if ruleKeys[k] {
					t.Fatalf("rule %s: %q, which loading reads, in the metadata", r.ID, k)
				}
			}
		}
		_ = set.Lint(Vocabulary{})
	})
}
