package policymd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateFixtures runs every testdata/validate fixture: a *.good.md file
// must be valid, a *.bad.md file must give exactly the problems of its
// *.bad.md.want file (file named by its base name).
func TestValidateFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/validate/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var good, bad int
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ps := Validate(name, src, Options{})
			switch {
			case strings.HasSuffix(name, ".good.md"):
				good++
				if len(ps) != 0 {
					t.Errorf("want valid, got:\n%v", ps)
				}
			case strings.HasSuffix(name, ".bad.md"):
				bad++
				if len(ps) == 0 {
					t.Fatal("want problems, got a valid file")
				}
				checkGolden(t, path+".want", ps.Error()+"\n")
			default:
				t.Fatalf("fixture %s is neither .good.md nor .bad.md", name)
			}
		})
	}
	if good == 0 || bad == 0 {
		t.Fatalf("found %d good and %d bad fixtures", good, bad)
	}
	// Every .want file belongs to a fixture.
	wants, _ := filepath.Glob("testdata/validate/*.want")
	for _, w := range wants {
		if _, err := os.Stat(strings.TrimSuffix(w, ".want")); err != nil {
			t.Errorf("%s has no fixture", w)
		}
	}
}

func TestProblemsError(t *testing.T) {
	_, err := Parse("p.md", []byte("---\nname: Bad Name\n---\n"), Options{})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 {
		t.Fatalf("errors.As Problems: %v", err)
	}
	want := `p.md:2:7: bad-value: name "Bad Name" must be kebab-case or snake_case (lower-case letters and digits joined by - or _)`
	if got := ps[0].String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
