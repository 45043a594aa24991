package stdcheck

import (
	_ "embed"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/ponens/ponens/policy/ltl"
)

// Check is one standard check: its name, what it asks, and its formula in
// the policy language.
type Check struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Formula     string `yaml:"formula"`
}

//go:embed checks.yaml
var checksYAML []byte

var checks = mustLoad(checksYAML)

// mustLoad decodes the embedded library and checks every formula: a check
// that does not parse is a bug of this package, caught at init by every
// test that imports it.
func mustLoad(data []byte) map[string]Check {
	var list []Check
	if err := yaml.Unmarshal(data, &list); err != nil {
		panic(fmt.Sprintf("stdcheck: checks.yaml: %v", err))
	}
	out := make(map[string]Check, len(list))
	for _, c := range list {
		f, err := ltl.Parse(c.Formula)
		if err == nil {
			if errs := ltl.Check(c.Formula, f); len(errs) > 0 {
				err = errs[0]
			}
		}
		if err != nil {
			panic(fmt.Sprintf("stdcheck: checks.yaml: %s: %v", c.Name, err))
		}
		out[c.Name] = c
	}
	return out
}

// Get returns the standard check called name.
func Get(name string) (Check, bool) {
	c, ok := checks[name]
	return c, ok
}

// Names returns the names of the standard checks, sorted.
func Names() []string {
	out := make([]string, 0, len(checks))
	for n := range checks {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
