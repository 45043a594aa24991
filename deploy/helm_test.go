package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ponens/ponens/config"
)

// helmBinary is helm from PONENS_HELM, the cache `make helm` installs
// into, or the PATH; the test is skipped, saying so, without one.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PONENS_HELM"); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := filepath.Join(home, ".cache", "ponens", "bin", "helm"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Skip("helm is not installed (make helm installs it); the chart is not rendered")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// chartWithoutDependencies copies the chart to a temporary directory
// without its dependencies: the NATS chart cannot be fetched here, and
// helm refuses to render a chart whose dependencies are missing.
func chartWithoutDependencies(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ponens")
	if err := os.CopyFS(dir, os.DirFS(repoFile(t, "deploy/helm/ponens"))); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, "Chart.yaml")
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var chart map[string]any
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	delete(chart, "dependencies")
	out, _ := yaml.Marshal(chart)
	if err := os.WriteFile(meta, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestChartDeclaresNATS: the chart depends on the NATS chart, switched by
// nats.enabled.
func TestChartDeclaresNATS(t *testing.T) {
	data, err := os.ReadFile(repoFile(t, "deploy/helm/ponens/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Dependencies []struct{ Name, Repository, Condition string } `yaml:"dependencies"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	if len(chart.Dependencies) != 1 || chart.Dependencies[0].Name != "nats" || chart.Dependencies[0].Condition != "nats.enabled" ||
		!strings.Contains(chart.Dependencies[0].Repository, "nats-io") {
		t.Fatalf("Chart.yaml dependencies %+v, want the NATS chart under nats.enabled", chart.Dependencies)
	}
}

// k8sObject is what the tests read of a rendered object.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Selector       map[string]any `yaml:"selector"`
		MaxUnavailable any            `yaml:"maxUnavailable"`
		Ports          []struct {
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sProbe struct {
	HTTPGet struct{ Path, Port string } `yaml:"httpGet"`
}

type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []k8sEnv `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Resources      struct {
		Requests, Limits map[string]string
	} `yaml:"resources"`
}

type k8sEnv struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom struct {
		SecretKeyRef struct{ Key string } `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

// helmTemplate renders the chart with args and parses its objects.
func helmTemplate(t *testing.T, helm, chart string, args ...string) ([]k8sObject, error) {
	t.Helper()
	cmd := exec.Command(helm, append([]string{"template", "rel", chart, "--set", "nats.enabled=false"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, errors.New(errOut.String())
	}
	var objs []k8sObject
	dec := yaml.NewDecoder(&out)
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			t.Fatalf("helm template: not YAML: %v", err)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
}

// TestChartRenders: helm lints and renders the chart; every part's
// command line is one the binary takes, its PONENS_* variables are
// configuration keys, its secrets are the documented keys, it has
// resources and (but for the workers) probes on ports it names; the
// ConfigMap is a configuration ponens loads; the workers have a
// PodDisruptionBudget; each Service targets a port its pods have. Without
// a query token the chart refuses to render, naming the value.
func TestChartRenders(t *testing.T) {
	helm := helmBinary(t)
	bin := ponensBinary(t)
	chart := chartWithoutDependencies(t)
	if out, err := exec.Command(helm, "lint", chart, "--set", "nats.enabled=false").CombinedOutput(); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	if _, err := helmTemplate(t, helm, chart); err == nil || !strings.Contains(err.Error(), "ponens.config.query.tokens") {
		t.Fatalf("rendered without a query token: %v", err)
	}
	token := `ponens.config.query.tokens=[{"name":"ops","sha256":"` + strings.Repeat("ab", 32) + `","scope":"read"}]`
	objs, err := helmTemplate(t, helm, chart, "--set-json", token)
	if err != nil {
		t.Fatalf("helm template: %s", err)
	}
	env := envNames()
	secrets := []string{"nats-gateway-password", "nats-worker-password", "nats-alert-password", "nats-sink-password", "nats-admin-password", "gateway-token", "store-dsn"}
	ports := map[string][]string{} // component → its port names
	parts := map[string]bool{}
	pdb := false
	for _, o := range objs {
		switch o.Kind {
		case "ConfigMap":
			f := filepath.Join(t.TempDir(), "ponens.yaml")
			if err := os.WriteFile(f, []byte(o.Data["ponens.yaml"]), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := config.Load(f, nil, nil); err != nil {
				t.Errorf("ConfigMap %s: %v", o.Metadata.Name, err)
			}
		case "PodDisruptionBudget":
			pdb = strings.HasSuffix(o.Metadata.Name, "-worker") && o.Spec.MaxUnavailable != nil
		case "Deployment":
			comp := o.Spec.Template.Metadata.Labels["app.kubernetes.io/component"]
			parts[comp] = true
			for _, c := range o.Spec.Template.Spec.Containers {
				ports[comp] = append(ports[comp], checkContainer(t, bin, o.Metadata.Name, comp, c, env, secrets)...)
			}
		}
	}
	for _, want := range []string{"gateway", "worker", "sink", "alert", "query"} {
		if !parts[want] {
			t.Errorf("no Deployment of the %s", want)
		}
	}
	if !pdb {
		t.Error("no PodDisruptionBudget bounding the workers")
	}
	for _, o := range objs {
		if o.Kind != "Service" {
			continue
		}
		comp, _ := o.Spec.Selector["app.kubernetes.io/component"].(string)
		for _, p := range o.Spec.Ports {
			if !slices.Contains(ports[comp], p.TargetPort) {
				t.Errorf("Service %s targets port %q, which the %s pods do not have (%v)", o.Metadata.Name, p.TargetPort, comp, ports[comp])
			}
		}
	}
}

// checkContainer checks one rendered container and returns its port
// names.
func checkContainer(t *testing.T, bin, name, comp string, c k8sContainer, env map[string]string, secrets []string) []string {
	t.Helper()
	args := slices.Clone(c.Args)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "$(POD_NAME)", "pod-0")
	}
	if out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput(); err != nil {
		t.Errorf("%s: ponens %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	for _, e := range c.Env {
		if _, ok := env[e.Name]; strings.HasPrefix(e.Name, config.EnvPrefix+"_") && !ok {
			t.Errorf("%s: %s is no configuration key's variable", name, e.Name)
		}
		if k := e.ValueFrom.SecretKeyRef.Key; k != "" && !slices.Contains(secrets, k) {
			t.Errorf("%s: secret key %q is not one values.yaml documents", name, k)
		}
	}
	if len(c.Resources.Requests) == 0 || len(c.Resources.Limits) == 0 {
		t.Errorf("%s: no resource requests and limits", name)
	}
	var names []string
	for _, p := range c.Ports {
		names = append(names, p.Name)
	}
	if comp == "worker" {
		return names
	}
	for _, p := range []*k8sProbe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet.Path == "" || !slices.Contains(names, p.HTTPGet.Port) {
			t.Errorf("%s: a probe missing or on a port the container does not name (%v)", name, names)
		}
	}
	if comp == "query" && (c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz") {
		t.Errorf("%s: the query service's readiness is not /readyz", name)
	}
	if comp == "query" && slices.Contains(c.Args, "--alerts") && !slices.ContainsFunc(c.Env, func(e k8sEnv) bool { return e.Name == "PONENS_NATS_USER" && e.Value == "admin" }) {
		t.Errorf("%s: serves the alert routes (--alerts) without the NATS admin user", name)
	}
	return names
}
