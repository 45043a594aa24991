package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ponens/ponens/config"
)

// The ponens binary, built once for the tests that ask it about their
// command lines.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func ponensBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ponens-deploy-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "ponens")
		if out, err := exec.Command("go", "build", "-o", binPath, "../cmd/ponens").CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build ./cmd/ponens: %v\n%s", binErr, binPath)
	}
	return binPath
}

// composeService is what the tests read of a compose service.
type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]any    `yaml:"depends_on"`
}

// readCompose parses a compose file (anchors and merge keys resolved).
func readCompose(t *testing.T, rel string) map[string]composeService {
	t.Helper()
	data, err := os.ReadFile(repoFile(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	if len(doc.Services) == 0 {
		t.Fatalf("%s: no services", rel)
	}
	return doc.Services
}

// envNames maps every configuration key's environment variable to it.
func envNames() map[string]string {
	names := map[string]string{}
	for _, k := range config.Keys() {
		names[config.EnvPrefix+"_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))] = k
	}
	return names
}

// TestComposePonensParts: every ponens service of the compose files runs
// a command line the binary takes (its flags exist), sets only PONENS_*
// variables that are configuration keys, publishes the port it listens
// on, mounts files the repository has, and depends only on services that
// exist; every ${VAR} the files require is in .env.example.
func TestComposePonensParts(t *testing.T) {
	bin := ponensBinary(t)
	env := envNames()
	example, err := os.ReadFile(repoFile(t, "deploy/compose/.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	required := regexp.MustCompile(`\$\{([A-Z_]+)(:\?[^}]*)?(:-[^}]*)?\}`)
	base := readCompose(t, "deploy/compose/docker-compose.yml")
	for _, file := range []string{"deploy/compose/docker-compose.yml", "deploy/compose/docker-compose.cluster.yml"} {
		raw, _ := os.ReadFile(repoFile(t, file))
		for _, m := range required.FindAllStringSubmatch(string(raw), -1) {
			if m[3] == "" && !regexp.MustCompile(`(?m)^`+m[1]+`=`).Match(example) {
				t.Errorf("%s needs ${%s}, which .env.example does not set", file, m[1])
			}
		}
		services := readCompose(t, file)
		ponensParts := 0
		for name, s := range services {
			for dep := range s.DependsOn {
				if _, ok := services[dep]; !ok {
					if _, ok := base[dep]; !ok {
						t.Errorf("%s: %s depends on %s, which no compose file has", file, name, dep)
					}
				}
			}
			for _, v := range s.Volumes {
				src, _, ok := strings.Cut(v, ":")
				if !ok || !strings.HasPrefix(src, ".") {
					continue // a named volume
				}
				if _, err := os.Stat(filepath.Join(repoFile(t, "deploy/compose"), src)); err != nil && !strings.HasSuffix(src, "query.yaml") {
					t.Errorf("%s: %s mounts %s: %v", file, name, src, err)
				}
			}
			if !strings.HasPrefix(s.Image, "ponens:") {
				continue
			}
			ponensParts++
			checkPonensPart(t, bin, file+": "+name, s, env)
		}
		if file == "deploy/compose/docker-compose.yml" && ponensParts < 5 {
			t.Errorf("%s: %d ponens services, want the gateway, workers, sink, alert stage and query service", file, ponensParts)
		}
	}
}

// checkPonensPart checks one ponens service: its command line, its
// variables, its port.
func checkPonensPart(t *testing.T, bin, name string, s composeService, env map[string]string) {
	t.Helper()
	if len(s.Command) == 0 {
		t.Errorf("%s: no command", name)
		return
	}
	// cobra parses the flags before it answers --help: an unknown one fails.
	cmd := exec.Command(bin, append(slices.Clone(s.Command), "--help")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: ponens %s: %v\n%s", name, strings.Join(s.Command, " "), err, out)
	}
	for v, val := range s.Environment {
		if !strings.HasPrefix(v, config.EnvPrefix+"_") {
			continue
		}
		key, ok := env[v]
		if !ok {
			t.Errorf("%s: %s is no configuration key's variable", name, v)
			continue
		}
		if strings.HasSuffix(key, ".listen") {
			_, port, _ := strings.Cut(val, ":")
			if len(s.Ports) > 0 && !slices.ContainsFunc(s.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port) }) {
				t.Errorf("%s: listens on %s (%s) but publishes %v", name, val, v, s.Ports)
			}
		}
	}
}

// The example settings of the query service load, and refuse nothing.
func TestComposeQueryExample(t *testing.T) {
	if _, err := config.Load(repoFile(t, "deploy/compose/query.example.yaml"), nil, nil); err != nil {
		t.Fatal(err)
	}
}
