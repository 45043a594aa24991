package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/transport"
)

// copyDir copies the files of dir (not recursive) into a new temporary
// directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestServeReloadsRules: `ponens serve` reloads its rules when a rules file
// changes and on SIGHUP; a rule whose formula changed is put in force under
// a new version; a broken file is reported with its place and the rules in
// force stay.
func TestServeReloadsRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ponens serve")
	}
	rules := copyDir(t, "../../examples/rules")
	gallery := filepath.Join(rules, "gallery.yaml")
	original, err := os.ReadFile(gallery)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	data := t.TempDir()
	t.Setenv("PONENS_NATS_STORE_DIR", data) // manifest, below, finds serve's credentials there
	root.SetArgs([]string{"serve", "--rules", rules, "--listen", freeAddr(t), "--http", "127.0.0.1:0", "--no-store"})
	var serveErr error
	done := make(chan struct{})
	go func() { defer close(done); serveErr = root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
			if serveErr != nil {
				t.Errorf("ponens serve: %v", serveErr)
			}
		case <-time.After(20 * time.Second):
			t.Error("ponens serve did not stop")
		}
	}()
	waitOutput := func(what string, buf *syncBuffer, want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(buf.String(), want) {
			select {
			case <-done:
				t.Fatalf("ponens serve stopped: %v\n%s\n%s", serveErr, stdout.String(), stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: no %q in\n%s\n%s", what, want, stdout.String(), stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitOutput("the start", &stdout, "rules     9 loaded, reloaded on SIGHUP and when a rules file changes")

	changed := strings.Replace(string(original), "formula: G(EditFile → ¬touches_secrets)", "formula: G(EditFile → ¬touches_secrets ∧ ¬(target = \"id_rsa\"))", 1)
	if changed == string(original) {
		t.Fatal("the test's edit does not apply to examples/rules/gallery.yaml")
	}
	if err := os.WriteFile(gallery, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	waitOutput("the reload", &stdout, "rules     reloaded (a rules file changed): 9 in force; no_secret_edits changed meaning: now no_secret_edits@2")

	broken := filepath.Join(rules, "broken.yaml")
	if err := os.WriteFile(broken, []byte("rules:\n  - id: oops\n    formula: G(EditFile →\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitOutput("the refusal", &stderr, "rules not reloaded: the rules in force stay")
	if !strings.Contains(stderr.String(), broken+":3:") {
		t.Errorf("the refusal does not name %s:3: %s", broken, stderr.String())
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitOutput("the SIGHUP reload", &stdout, "rules     reloaded (SIGHUP): 9 in force; none changed")
	if n := strings.Count(stdout.String(), "rules     reloaded"); n > 3 {
		t.Errorf("%d reloads for one edit, one removal and one SIGHUP:\n%s", n, stdout.String())
	}

	url := regexp.MustCompile(`nats +(nats://\S+)`).FindStringSubmatch(stdout.String())
	if url == nil {
		t.Fatalf("serve does not say where NATS listens:\n%s", stdout.String())
	}
	out, errOut, code := runPonens(t, "manifest", "--url", url[1], "--json")
	if code != exitOK {
		t.Fatalf("ponens manifest: exit %d: %s", code, errOut)
	}
	var hist []worker.RuleHistory
	if err := json.Unmarshal([]byte(out), &hist); err != nil {
		t.Fatal(err)
	}
	versions := map[string][]string{}
	for _, h := range hist {
		for _, v := range h.Versions {
			versions[h.ID] = append(versions[h.ID], v.VerdictID+" "+v.Text)
		}
	}
	if len(hist) != 9 || len(versions["no_secret_edits"]) != 2 || len(versions["tests_before_commit"]) != 1 ||
		!strings.HasPrefix(versions["no_secret_edits"][1], "no_secret_edits@2 G(EditFile → ¬touches_secrets ∧ ¬target = \"id_rsa\")") {
		t.Errorf("manifest: %v", versions)
	}
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestRuleWatcherConcerns: a change reloads when it is to a rules file given
// or to a policy file in a rules directory given, not to a neighbour of a
// file given.
func TestRuleWatcherConcerns(t *testing.T) {
	dir, tree := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(file, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	rw, err := watchRules(&ruleFlags{rules: []string{file, tree}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	for name, want := range map[string]bool{
		file:                                    true,
		filepath.Join(dir, "b.yaml"):            false,
		filepath.Join(tree, "x.json"):           true,
		filepath.Join(tree, "sub", "POLICY.md"): true,
		filepath.Join(tree, "notes.txt"):        false,
		filepath.Join(tree, ".x.yaml.swp"):      false,
		filepath.Join(tree+"-other", "x.yaml"):  false,
	} {
		if got := rw.concerns(name); got != want {
			t.Errorf("concerns(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestRuleWatcherPaths: a file named relatively, or through a symbolic
// link, is the same file to the watcher whichever way a change names it.
func TestRuleWatcherPaths(t *testing.T) {
	dir, tree := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")} {
		if err := os.WriteFile(f, []byte("rules: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(tree, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	rw, err := watchRules(&ruleFlags{rules: []string{"a.yaml", filepath.Join(dir, "b.yaml"), link}}, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	for name, want := range map[string]bool{
		"./b.yaml":                    true,
		filepath.Join(dir, "a.yaml"):  true,
		"c.yaml":                      false,
		filepath.Join(link, "x.yaml"): true,
		filepath.Join(tree, "x.yaml"): true,
		filepath.Join(tree, "x.txt"):  false,
	} {
		if got := rw.concerns(name); got != want {
			t.Errorf("concerns(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestRuleWatcherLinks: a rules file named through a symbolic link is
// watched under both names; "link/.." means what the system makes of it;
// a directory created in a rules directory concerns the rules.
func TestRuleWatcherLinks(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "deep", "sub")
	tree := filepath.Join(root, "tree")
	for _, d := range []string{deep, tree} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(root, "deep", "x.yaml"), filepath.Join(root, "real.yaml")} {
		if err := os.WriteFile(f, []byte("rules: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := t.TempDir()
	lnk, fileLink := filepath.Join(links, "lnk"), filepath.Join(links, "rules.yaml")
	if err := os.Symlink(deep, lnk); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real.yaml"), fileLink); err != nil {
		t.Fatal(err)
	}
	rw, err := watchRules(&ruleFlags{rules: []string{fileLink, lnk + "/../x.yaml", tree}}, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer rw.close()
	if err := os.Mkdir(filepath.Join(tree, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		fileLink:                                  true, // the link replaced (ln -sfn)
		filepath.Join(root, "real.yaml"):          true, // the file it points to
		filepath.Join(root, "deep", "x.yaml"):     true, // lnk/.. is deep, not links
		filepath.Join(links, "x.yaml"):            false,
		filepath.Join(tree, "new"):                true, // a new directory of rules
		filepath.Join(tree, "new", "r.yaml"):      true,
		filepath.Join(root, "deep", "other.yaml"): false,
	} {
		if got := rw.concerns(name); got != want {
			t.Errorf("concerns(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestWorkerWaitsForNATS: `ponens worker` started before its NATS server
// waits for it (nats.start_wait); a SIGHUP meanwhile does not kill it but
// reloads the rules once the worker runs.
func TestWorkerWaitsForNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a server")
	}
	addr := freeAddr(t)
	t.Setenv("PONENS_NATS_START_WAIT", "30s")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"worker", "--url", "nats://" + addr, "--rules", copyDir(t, "../../examples/rules"), "--name", "late"})
	var runErr error
	done := make(chan struct{})
	go func() { defer close(done); runErr = root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
			if runErr != nil {
				t.Errorf("ponens worker: %v\n%s", runErr, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("ponens worker did not stop")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "NATS is not available yet; trying again") {
		if time.Now().After(deadline) {
			t.Fatalf("ponens worker does not say it waits:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Listen: addr, StoreDir: t.TempDir(), Name: "late"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown) // after the worker has stopped (the deferred cancel)
	deadline = time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "rules     reloaded (SIGHUP)") {
		select {
		case <-done:
			t.Fatalf("ponens worker stopped: %v\n%s\n%s", runErr, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload after the SIGHUP:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(stdout.String(), "worker late on nats://"+addr) {
		t.Errorf("the worker does not report its start:\n%s", stdout.String())
	}
}
