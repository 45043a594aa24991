package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// ponensBinary builds the ponens binary once for the package's tests.
func ponensBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "ponens-bin-*"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ponens")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// cliResult is what a run of the binary printed and its exit code.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runBinary runs the binary in dir with env added to the environment.
func runBinary(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ponensBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ponens %v: %v", args, err)
	}
	return cliResult{out.String(), errOut.String(), code}
}

// startServe runs `ponens serve` in dir (its store the default data/nats,
// with the per-role nkeys it generates) on free loopback addresses and
// returns its NATS URL and gateway address once its gateway listens, and
// its stderr; the process is stopped when the test ends.
func startServe(t *testing.T, dir string, env ...string) (string, string, *syncBuffer) {
	t.Helper()
	natsAddr, httpAddr := freeAddr(t), freeAddr(t)
	repo, _ := filepath.Abs("../..")
	cmd := exec.Command(ponensBinary(t), "serve", "--rules", filepath.Join(repo, "examples", "rules"),
		"--listen", natsAddr, "--http", httpAddr, "--store", filepath.Join(dir, "serve-store")) // stores in dir/data/nats, where the other commands run in dir find its credentials
	if !slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "PONENS_QUERY_LISTEN=") }) {
		cmd.Args = append(cmd.Args, "--query", freeAddr(t))
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var errOut syncBuffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "gateway ") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("ponens serve did not start:\n%s", errOut.String())
	}
	return "nats://" + natsAddr, httpAddr, &errOut
}

// TestCLIExitCodes runs the real binary, from a directory outside the
// repository, for every command: each outcome exits with the code of the
// contract (0 all well, 1 a rule violated or a step not allowed, 2 bad
// input or usage, 3 a service not reached), and each error is one line
// prefixed with the command that failed.
func TestCLIExitCodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ex := func(p string) string { return filepath.Join(repo, "examples", p) }
	work := t.TempDir()
	traces := filepath.Join(work, "traces") // check writes verdict streams beside the traces: not into the repository
	if err := os.CopyFS(traces, os.DirFS(ex("traces"))); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	conflicting := write("conflicting.jsonl", `{"v":1,"runId":"ended-1","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{}}
{"v":1,"runId":"ended-1","seq":2,"ts":"2026-01-01T00:00:09Z","type":"run.finish","end":{}}
`)
	ended := write("ended.jsonl", `{"v":1,"runId":"ended-1","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{}}
{"v":1,"runId":"ended-1","seq":2,"ts":"2026-01-01T00:00:01Z","type":"run.finish","end":{}}
`)
	notraces := filepath.Dir(write("notraces/readme.txt", "no traces here\n"))
	corpus := filepath.Join(work, "corpus")
	if err := os.CopyFS(corpus, os.DirFS(filepath.Join(repo, "testdata", "corpus"))); err != nil {
		t.Fatal(err)
	}
	cp := func(p string) string { return filepath.Join(corpus, p) }
	misspelled := write("misspelled.json", `{"id": "m", "fromula": "G(a)"}`)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	down := "nats://127.0.0.1:1" // port 1 on loopback refuses
	url, gatewayAddr, serveLog := startServe(t, work)
	for _, role := range []string{"agent", "gateway", "worker", "alert", "sink", "admin"} {
		st, err := os.Stat(filepath.Join(work, "data", "nats", "credentials", role+".nk"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("serve's %s credentials: %v, %v", role, st, err)
		}
	}
	noWait := []string{"PONENS_NATS_START_WAIT=0s"}
	store := filepath.Join(work, "store")
	makeStore(t, store)
	const formula = "G(GitCommit → P(RunTests))"

	for _, tc := range []struct {
		name  string
		args  []string
		env   []string
		code  int    // the contract's numbers, not exitOK…exitUnavailable: a changed constant must fail here
		want  string // in stderr, or in stdout when the code is 0 or 1
		retry bool   // run again until the code is the one wanted (the service catching up)
	}{
		{name: "version", args: []string{"version"}, want: "ponens "},
		{name: "--version", args: []string{"--version"}, want: "(commit "},
		{name: "unknown command", args: []string{"frob"}, code: 2, want: `ponens: unknown command "frob" for "ponens"`},
		{name: "unknown flag", args: []string{"check", "--frob"}, code: 2, want: "ponens check: unknown flag: --frob"},

		{name: "check violated", args: []string{"check", "--rules", ex("rules"), "--out", work, traces}, code: 1, want: "7 violated"},
		{name: "check again: verdict streams skipped", args: []string{"check", "--rules", ex("rules"), "--out", work, traces}, code: 1, want: "9 rules × 5 traces: 36 satisfied, 7 violated"},
		{name: "check satisfied", args: []string{"check", "--formula", formula, "--out", work, filepath.Join(traces, "verify_proved.json")}, want: "1 satisfied, 0 violated"},
		{name: "check clean reference over its limit: read as it goes", args: []string{"check", "--formula", formula, "--out", work, filepath.Join(traces, "verify_proved.json")},
			env: []string{"PONENS_TRACE_MAX_REFERENCE_BYTES=2048"}, want: "1 satisfied, 0 violated"},
		{name: "check reference with warnings over its limit", args: []string{"check", "--formula", formula, "--out", work, cp("traces/refund_violating.json")},
			env: []string{"PONENS_TRACE_MAX_REFERENCE_BYTES=2048"}, code: 2, want: "refund_violating.json: too large: expected at most 2048 bytes (trace.max_reference_bytes), got 4275 bytes; a clean reference trace this large is checked as it is read, but this one holds"},
		{name: "eval reference over its limit", args: []string{"eval", "--formula", formula, filepath.Join(traces, "verify_proved.json")},
			env: []string{"PONENS_TRACE_MAX_REFERENCE_BYTES=2048"}, code: 2, want: "verify_proved.json: too large: expected at most 2048 bytes (trace.max_reference_bytes), got 4806 bytes"},
		{name: "check trace file over its limit", args: []string{"check", "--formula", formula, "--out", work, filepath.Join(traces, "fleet.jsonl")},
			env: []string{"PONENS_TRACE_MAX_FILE_BYTES=2048"}, code: 2, want: "fleet.jsonl: too large: expected at most 2048 bytes (trace.max_file_bytes), got 2861 bytes"},
		{name: "check rules file over its limit", args: []string{"check", "--rules", ex("rules"), "--out", work, filepath.Join(traces, "fleet.jsonl")},
			env: []string{"PONENS_RULES_MAX_FILE_BYTES=1024"}, code: 2, want: "gallery.yaml: too large: expected at most 1024 bytes (rules.max_file_bytes), got 1583 bytes"},
		{name: "check no trace", args: []string{"check", "--rules", ex("rules")}, code: 2, want: "ponens check: give at least one trace file"},
		{name: "check missing trace", args: []string{"check", "--rules", ex("rules"), "nope.jsonl"}, code: 2, want: "ponens check: nope.jsonl: no such file or directory"},
		{name: "check directory without traces", args: []string{"check", "--rules", ex("rules"), notraces}, code: 2, want: "ponens check: " + notraces + ": a directory without trace files"},
		{name: "check no rules", args: []string{"check", ex("traces")}, code: 2, want: "ponens check: give at least one --formula or --rules"},
		{name: "check embedded policies", args: []string{"check", "--out", work, cp("traces/cart_violating.json")}, code: 1, want: "4 rules × 1 trace: 0 satisfied, 4 violated"},
		{name: "check embedded policies held", args: []string{"check", "--out", work, cp("traces/cart_governed.json")}, want: "4 satisfied, 0 violated"},
		{name: "check --fail-on unresolved", args: []string{"check", "--fail-on", "unresolved", "--formula", "F(RunTests) ∨ G(¬EditFile)", "--out", work, filepath.Join(traces, "fleet.jsonl")}, code: 1, want: "unresolved"},
		{name: "check --fail-on bad", args: []string{"check", "--fail-on", "pending", "--rules", ex("rules"), traces}, code: 2, want: `ponens check: --fail-on "pending": expected violated or unresolved`},

		{name: "eval failed", args: []string{"eval", "--rules", ex("rules/gallery.yaml"), ex("traces")}, code: 1, want: "fail"},
		{name: "eval passed", args: []string{"eval", "--formula", formula, ex("traces/verify_proved.json")}, want: "pass"},
		{name: "eval embedded policies", args: []string{"eval", cp("traces/refund_governed.json")}, want: "pass"},
		{name: "eval POLICY.md rules skipped", args: []string{"eval", "--rules", ex("rules"), ex("traces/verify_proved.json")}, code: 1, want: "fail"},
		{name: "policy check --strict warning", args: []string{"policy", "check", "--strict", cp("policies")}, code: 2, want: "ponens policy check: 1 warning (--strict)"},
		{name: "policy check --traces", args: []string{"policy", "check", "--traces", cp("traces"), cp("policies")}, want: "ok    tests-before-commit"},
		{name: "policy check misspelled field", args: []string{"policy", "check", misspelled}, code: 2, want: `unknown field "fromula": did you mean "formula"?`},
		{name: "eval missing trace", args: []string{"eval", "--formula", formula, "nope.json"}, code: 2, want: "ponens eval: nope.json: no such file or directory"},

		{name: "decide deny", args: []string{"decide", "--rules", ex("rules"), ex("decide/intent.json")}, code: 1, want: "deny by no-env-writes"},
		{name: "decide allow", args: []string{"decide", "--formula", formula, "--mode", "observe", ex("decide/commit.json")}, want: "allow"},
		{name: "decide bad mode", args: []string{"decide", "--formula", formula, "--mode", "block", ex("decide/commit.json")}, code: 2, want: `ponens decide: --mode: expected deny, suspend, abort or observe, got "block"`},
		{name: "decide ended history", args: []string{"decide", "--rules", ex("rules"), "--history", ended, ex("decide/commit.json")}, code: 2, want: "the run has ended (run.finish at seq 2): no step can follow"},
		// A reference trace without an outcome, as a history, is the run so far.
		{name: "decide history without outcome", args: []string{"decide", "--rules", ex("rules"), "--history", cp("traces/cart_violating.json"), ex("decide/commit.json")}, code: 1, want: "deny by tests_before_commit"},
		{name: "decide history with outcome", args: []string{"decide", "--rules", ex("rules"), "--history", cp("traces/cart_governed.json"), ex("decide/commit.json")}, code: 2, want: "the run has ended (run.finish at seq 9)"},
		{name: "decide --url without --run", args: []string{"decide", "--rules", ex("rules"), "--url", url, ex("decide/commit.json")}, code: 2, want: "ponens decide: --url is for asking the running service"},
		{name: "decide --run service down", args: []string{"decide", "--run", "r", "--url", down, ex("decide/commit.json")}, code: 3, want: "ponens decide: connect to " + down},
		{name: "decide --run unknown run", args: []string{"decide", "--run", "nobody", "--url", url, ex("decide/commit.json")}, code: 2, want: `ponens decide: run "nobody" is unknown to the service`},
		{name: "decide --run --new-run", args: []string{"decide", "--run", "nobody", "--new-run", "--url", url, "--json", ex("decide/intent.json")}, code: 1, want: `"decision":"deny"`},

		{name: "publish", args: []string{"publish", "--url", url, ended}, want: "published 2 events of 1 run from 1 file"},
		{name: "publish a conflicting duplicate", args: []string{"publish", "--url", url, conflicting}, code: 2,
			want: "ponens publish: 1 events have the run and seq of stored events with other content; sent to the dead letters as conflicting-duplicate"},
		{name: "decide --run ended run", args: []string{"decide", "--run", "ended-1", "--url", url, ex("decide/commit.json")}, code: 2,
			want: "ponens decide: run \"ended-1\": the run has ended (run.finish at seq 2): no step can follow\n", retry: true},
		{name: "publish a directory", args: []string{"publish", "--url", url, ex("traces")}, want: "from 3 files"},
		{name: "publish nothing", args: []string{"publish"}, code: 2, want: "ponens publish: give at least one trace file"},
		{name: "publish no timeout", args: []string{"publish", "--url", url, "--timeout", "0s", ended}, code: 2, want: "ponens publish: --timeout must be positive, got 0s"},
		{name: "publish without credentials", args: []string{"publish", "--url", url, ended}, env: []string{"PONENS_NATS_STORE_DIR=" + notraces},
			code: 3, want: "ponens publish: connect to " + url + " as agent: nats: Authorization Violation"},
		{name: "publish with the sink's credentials", args: []string{"publish", "--url", url, ex("traces")},
			env:  []string{"PONENS_NATS_NKEY_SEED_FILE=" + filepath.Join(work, "data", "nats", "credentials", "sink.nk"), "PONENS_NATS_ROLE=sink"},
			code: 3, want: `(the server does not let this client's user publish on ponens.events.*)`},
		{name: "publish a user without password", args: []string{"publish", "--url", url, ended}, env: []string{"PONENS_NATS_USER=admin"},
			code: 2, want: "ponens publish: config: nats.user, nats.password: give both or neither"},
		{name: "publish a missing seed file", args: []string{"publish", "--url", url, ended}, env: []string{"PONENS_NATS_NKEY_SEED_FILE=nope.nk"},
			code: 2, want: "ponens publish: nats credentials: nkey seed file: stat nope.nk: no such file or directory"},
		{name: "publish service down", args: []string{"publish", "--url", down, ended}, code: 3, want: "ponens publish: connect to " + down},
		{name: "deadletters service down", args: []string{"deadletters", "--url", down}, code: 3, want: "ponens deadletters: connect to " + down},
		{name: "deadletters bad since", args: []string{"deadletters", "--url", url, "--since", "-1h"}, code: 2, want: "ponens deadletters: --since must not be negative, got -1h0m0s"},
		{name: "deadletters bad reason", args: []string{"deadletters", "tail", "--url", url, "--reason", "Seq Gap"}, code: 2, want: `ponens deadletters tail: --reason "Seq Gap" is not a reason`},
		{name: "deadletters", args: []string{"deadletters", "--url", url, "--reason", "conflicting-duplicate"}, want: "conflicting-duplicate  publish"},
		{name: "alerts subscribe no channel", args: []string{"alerts", "subscribe", "hook", "--url", url}, code: 2, want: "ponens alerts subscribe: subscription hook: give exactly one channel: subject, webhook, slack or stream"},
		{name: "alerts subscribe bad glob", args: []string{"alerts", "subscribe", "hook", "--url", url, "--subject", "ponens.notify.t", "--rule", "[x"}, code: 2, want: `field rules: glob "[x"`},
		{name: "alerts subscribe service down", args: []string{"alerts", "subscribe", "hook", "--url", down, "--subject", "ponens.notify.t"}, code: 3, want: "ponens alerts subscribe: connect to " + down},
		{name: "alerts subscribe negative group wait", args: []string{"alerts", "subscribe", "g", "--url", url, "--webhook", "http://127.0.0.1:9/x", "--group-wait", "-1s"}, code: 2, want: "fields groupWait, groupInterval: must not be negative"},
		{name: "alerts subscribe", args: []string{"alerts", "subscribe", "bus", "--url", url, "--subject", "ponens.notify.team", "--rule", "tests_*"}, want: "subscription bus stored"},
		{name: "alerts subscribe repeat without grouping", args: []string{"alerts", "subscribe", "r", "--url", url, "--subject", "ponens.notify.r", "--repeat-interval", "1h"}, code: 2,
			want: "ponens alerts subscribe: subscription r: field repeatInterval: groups are repeated: set groupWait too"},
		{name: "alerts subscribe limits", args: []string{"alerts", "subscribe", "capped", "--url", url, "--subject", "ponens.notify.c", "--group-wait", "1s", "--repeat-interval", "1h", "--rate-limit", "3", "--rate-period", "1m"},
			want: "subscription capped stored"},
		{name: "alerts list limits", args: []string{"alerts", "list", "--url", url}, want: `"groupWait":"1s","repeatInterval":"1h0m0s","rateLimit":3,"ratePeriod":"1m0s"`},
		{name: "alerts test", args: []string{"alerts", "test", "bus", "--url", url}, want: `"attempts":1`},
		{name: "alerts test unknown", args: []string{"alerts", "test", "nobody", "--url", url}, code: 2, want: `ponens alerts test: no subscription "nobody"`},
		{name: "alerts silence no duration", args: []string{"alerts", "silence", "s", "--url", url}, code: 2, want: "ponens alerts silence: --for must be positive, got 0s"},
		{name: "alerts silence", args: []string{"alerts", "silence", "deploy", "--url", url, "--for", "1h", "--rule", "tests_*"}, want: "silence deploy until"},
		{name: "alerts list", args: []string{"alerts", "list", "--url", url}, want: `"subject":"ponens.notify.team"`},
		{name: "alerts delete", args: []string{"alerts", "delete", "bus", "--url", url}, want: "sub.bus deleted"},
		{name: "alerts delete unknown", args: []string{"alerts", "delete", "bus", "--url", url}, code: 2, want: "ponens alerts delete: sub.bus: not stored"},
		{name: "run without an id", args: []string{"run", ""}, code: 2, want: "ponens run: no run id given (ponens runs lists them)"},
		{name: "alerts unknown command", args: []string{"alerts", "frob"}, code: 2, want: `ponens alerts: unknown command "frob" (see ponens alerts --help)`},
		{name: "alerts subscribe subject outside notify", args: []string{"alerts", "subscribe", "x", "--subject", "foo.bar", "--url", url}, code: 2, want: "ponens alerts subscribe: subscription x: field subject: the alert stage publishes only under ponens.notify., got \"foo.bar\""},
		{name: "alerts subscribe bad webhook", args: []string{"alerts", "subscribe", "x", "--webhook", "not a url", "--url", url}, code: 2, want: "field webhook: want an http or https URL with a host"},

		{name: "manifest", args: []string{"manifest", "--url", url}, want: "tests_before_commit"},
		{name: "manifest service down", args: []string{"manifest", "--url", down}, code: 3, want: "ponens manifest: connect to " + down},
		{name: "demo", args: []string{"demo", "--url", url, "--agents", "2", "--runs", "1"}, want: "(2 agents, run ids demo-1-"},
		{name: "demo service down", args: []string{"demo", "--url", down}, code: 3, want: "ponens demo: connect to " + down},
		{name: "worker service down", args: []string{"worker", "--url", down, "--rules", ex("rules")}, env: noWait, code: 3, want: "ponens worker: connect to " + down},
		{name: "ingest service down", args: []string{"ingest", "--url", down}, env: noWait, code: 3, want: "ponens ingest: connect to " + down},
		{name: "ingest address taken", args: []string{"ingest", "--url", url, "--listen", taken.Addr().String()}, code: 2, want: "ponens ingest: gateway.listen: listen tcp " + taken.Addr().String()},
		{name: "ingest OTLP address taken", args: []string{"ingest", "--url", url, "--listen", freeAddr(t)}, env: []string{"PONENS_OTLP_LISTEN=" + taken.Addr().String()},
			code: 2, want: "ponens ingest: otlp.listen: listen tcp " + taken.Addr().String()},
		{name: "serve without rules", args: []string{"serve"}, code: 2, want: "ponens serve: give at least one --formula or --rules"},
		{name: "serve NATS address taken", args: []string{"serve", "--rules", ex("rules"), "--listen", taken.Addr().String(), "--data", filepath.Join(work, "s1")}, code: 2, want: "ponens serve: "},
		{name: "serve gateway address taken", args: []string{"serve", "--rules", ex("rules"), "--listen", freeAddr(t), "--http", taken.Addr().String(), "--data", filepath.Join(work, "s2")},
			code: 2, want: "ponens serve: gateway.listen: listen tcp " + taken.Addr().String()},
		{name: "serve demo flag without --demo", args: []string{"serve", "--rules", ex("rules"), "--agents", "3"}, code: 2, want: "ponens serve: --agents shapes the demo fleet: give --demo with it"},
		{name: "serve no workers", args: []string{"serve", "--rules", ex("rules"), "--workers", "0"}, code: 2, want: "ponens serve: --workers: want at least 1 monitor worker, got 0"},
		{name: "serve demo negative agents", args: []string{"serve", "--rules", ex("rules"), "--demo", "--agents", "-1"}, code: 2, want: "ponens serve: --agents: want at least 1 agent, got -1"},
		{name: "serve demo negative steps", args: []string{"serve", "--rules", ex("rules"), "--demo", "--steps", "-5"}, code: 2, want: "ponens serve: --steps: want at least 1 action per run, got -5"},
		{name: "serve demo violations over 1", args: []string{"serve", "--rules", ex("rules"), "--demo", "--violations", "2"}, code: 2, want: "ponens serve: --violations: want a share from 0 to 1, got 2"},
		{name: "demo negative rate", args: []string{"demo", "--rate", "-1"}, code: 2, want: "ponens demo: --rate: want 0 (unlimited) or more events per second, got -1"},
		{name: "bench built-in rules", args: []string{"bench", "--duration", "1s", "--runs", "20", "--rate", "200"}, want: "(the built-in examples)"},
		{name: "bench service down", args: []string{"bench", "--url", down}, code: 3, want: "ponens bench: connect to " + down},
		{name: "bench report unwritable out", args: []string{"bench", "report", "--out", filepath.Join(work, "no", "such", "report.md")}, code: 2, want: "ponens bench report: --out: open "},
		{name: "bench report zero duration", args: []string{"bench", "report", "--duration", "0s"}, code: 2, want: "ponens bench report: --duration and --events must be positive"},

		{name: "trace symbols", args: []string{"trace", "symbols", ex("record/payments.json")}, want: "6 symbols: 2 fresh, 1 out of date (M), 3 unknown (?)"},
		{name: "trace symbol unknown", args: []string{"trace", "symbol", ex("record/payments.json"), "nosuch", "--json"}, want: `{"symbol":"nosuch","known":false}`},
		{name: "trace symbol bad where", args: []string{"trace", "symbol", ex("record/payments.json"), "step", "--where", ""}, code: 2, want: "ponens trace symbol: --where"},
		{name: "trace symbols missing trace", args: []string{"trace", "symbols", "nope.json"}, code: 2, want: "ponens trace symbols: nope.json"},
		{name: "trace symbol no symbol", args: []string{"trace", "symbol", ex("record/payments.json")}, code: 2, want: "ponens trace symbol: "},
		{name: "sql", args: []string{"sql", "--store", store, "SELECT count() AS n FROM verdicts"}, want: "│ 0 │"},
		{name: "sql json", args: []string{"sql", "--store", store, "--format", "json", "SELECT 1 AS a"}, want: `{"a":1}`},
		{name: "sql refuses writes", args: []string{"sql", "--store", store, "DROP TABLE verdicts"}, code: 2, want: "ponens sql: only a query runs here (SELECT, WITH or EXPLAIN), got DROP"},
		{name: "sql refuses table function writes", args: []string{"sql", "--store", store, "INSERT INTO FUNCTION file('" + filepath.Join(work, "x.csv") + "', 'CSV') SELECT 1"}, code: 2, want: "ponens sql: only a query runs here (SELECT, WITH or EXPLAIN), got INSERT"},
		{name: "sql refuses a second statement", args: []string{"sql", "--store", store, "SELECT 1; KILL QUERY WHERE 1"}, code: 2, want: "ponens sql: clickhouse: Code: 62"},
		{name: "sql not a store", args: []string{"sql", "--store", ex("rules"), "SELECT 1"}, code: 2, want: "ponens sql: store.path (--store) " + ex("rules") + ": no store there"},
		{name: "sql syntax error", args: []string{"sql", "--store", store, "SELECT 1 +"}, code: 2, want: "ponens sql: clickhouse: Code: 62"},
		{name: "sql no store", args: []string{"sql", "--store", filepath.Join(work, "nostore"), "SELECT 1"}, code: 2, want: "ponens sql: store.path (--store) " + filepath.Join(work, "nostore") + ": no store there"},
		{name: "sql bad format", args: []string{"sql", "--store", store, "--format", "xml", "SELECT 1"}, code: 2, want: `ponens sql: --format: must be table, json or csv, got "xml"`},
		{name: "sql without the engine", args: []string{"sql", "--store", store, "SELECT 1"}, env: []string{"PONENS_CHDB_LIB=/nonexistent/libchdb.so"}, code: 3,
			want: "ponens sql: store " + store + ": the embedded ClickHouse engine (libchdb.so) is not installed: /nonexistent/libchdb.so: not found; install it with `make deps`"},
		{name: "sink without the engine", args: []string{"sink", "--url", down, "--store", store}, env: []string{"PONENS_CHDB_LIB=/nonexistent/libchdb.so"}, code: 3,
			want: "ponens sink: store " + store + ": the embedded ClickHouse engine (libchdb.so) is not installed"},
		{name: "sink service down", args: []string{"sink", "--url", down, "--store", store}, env: noWait, code: 3, want: "ponens sink: connect to " + down},
		{name: "sink store.dsn unreachable", args: []string{"sink", "--url", down}, env: []string{"PONENS_STORE_DSN=clickhouse://u:hunter2@127.0.0.1:1/db?dial_timeout=1s"}, code: 3, want: "ponens sink: the ClickHouse server of store.dsn did not answer (127.0.0.1:1)"},
		{name: "sink store.dsn bad", args: []string{"sink", "--url", down}, env: []string{"PONENS_STORE_DSN=http://u:hunter2@127.0.0.1:8123/db"}, code: 2, want: "ponens sink: store.dsn: must be clickhouse://"},
		{name: "sql store.dsn unreachable", args: []string{"sql", "SELECT 1"}, env: []string{"PONENS_STORE_DSN=clickhouse://127.0.0.1:1/db?dial_timeout=1s"}, code: 3, want: "ponens sql: the ClickHouse server of store.dsn did not answer (127.0.0.1:1)"},
		{name: "sql store.dsn bad", args: []string{"sql", "SELECT 1"}, env: []string{"PONENS_STORE_DSN=clickhouse://127.0.0.1:9000/db?dial_timeout=soon"}, code: 2, want: "ponens sql: store.dsn: clickhouse [dsn parse]: dial timeout"},
		{name: "sink metrics address taken", args: []string{"sink", "--url", url, "--store", store, "--metrics", taken.Addr().String()}, code: 2, want: "ponens sink: --metrics: listen tcp " + taken.Addr().String()},
		{name: "check --store", args: []string{"check", "--rules", ex("rules"), "--out", work, "--store", store, traces}, code: 1, want: "7 violated"},
		{name: "check --store without the engine", args: []string{"check", "--rules", ex("rules"), "--out", work, "--store", store, traces}, env: []string{"PONENS_CHDB_LIB=/nonexistent/libchdb.so"}, code: 3,
			want: "ponens check: --store " + store + ": the embedded ClickHouse engine (libchdb.so) is not installed"},

		{name: "policy", args: []string{"policy"}, want: "Available Commands:"},
		{name: "policy unknown command", args: []string{"policy", "frob"}, code: 2, want: `ponens policy: unknown command "frob"`},
		{name: "policy codex unknown command", args: []string{"policy", "codex", "frob"}, code: 2, want: `ponens policy codex: unknown command "frob"`},
		{name: "policy check", args: []string{"policy", "check", ex("rules")}, want: "ok    tests_before_commit"},
		{name: "policy check missing", args: []string{"policy", "check", "nope.yaml"}, code: 2, want: "ponens policy check: 1 problem"},
		{name: "policy validate", args: []string{"policy", "validate", ex("rules/POLICY.md")}, want: ": valid"},
		{name: "policy validate missing", args: []string{"policy", "validate", "nope.md"}, code: 2, want: "ponens policy validate: 1 of 1 file(s) invalid, 1 problem(s)"},
		{name: "policy list", args: []string{"policy", "list", "--dir", ex("rules")}, want: "project-guardrails"},
		{name: "policy list missing directory", args: []string{"policy", "list", "--dir", "/nonexistent"}, code: 2, want: "ponens policy list: --dir /nonexistent: no such file or directory"},
		{name: "policy context", args: []string{"policy", "context", "--dir", ex("rules")}, want: "# Policy: project-guardrails"},
		{name: "policy codex execpolicy", args: []string{"policy", "codex", "execpolicy", "--dir", ex("rules")}, want: "# policy project-guardrails"},
		{name: "policy codex guardian", args: []string{"policy", "codex", "guardian", "--dir", ex("rules")}, want: "project-guardrails"},
		{name: "policy install", args: []string{"policy", "install", ex("rules"), "--dir", work}, want: "installed " + filepath.Join(work, ".policies")},
		{name: "policy install nothing", args: []string{"policy", "install"}, code: 2, want: "ponens policy install: give exactly one SOURCE"},

		{name: "import", args: []string{"import"}, want: "Available Commands:"},
		{name: "import claude-code", args: []string{"import", "claude-code", ex("imports/claude-code.jsonl")}, want: `"type":"run.start"`},
		{name: "import claude-code --explain", args: []string{"import", "claude-code", "--explain", "--out", filepath.Join(work, "cc.jsonl"), ex("imports/claude-code.jsonl")}, want: "seq 7 action 6 RunTests (failed)"},
		{name: "import claude-code nothing", args: []string{"import", "claude-code"}, code: 2, want: "ponens import claude-code: give one TRANSCRIPT or --latest"},
		{name: "import claude-code missing", args: []string{"import", "claude-code", "nope.jsonl"}, code: 2, want: "ponens import claude-code: open nope.jsonl: no such file or directory"},
		{name: "import claude-code not a transcript", args: []string{"import", "claude-code", ended}, code: 2, want: "no line names a session (sessionId): not a Claude Code transcript"},
		{name: "import claude-code --latest none", args: []string{"import", "claude-code", "--latest"}, env: []string{"CLAUDE_CONFIG_DIR=" + work}, code: 2, want: "ponens import claude-code: --latest: no Claude Code sessions for " + work},
		{name: "import --out and --publish", args: []string{"import", "codex", "--out", "x", "--publish", ex("imports/codex.jsonl")}, code: 2, want: "ponens import codex: --out and --publish: give one"},
		{name: "import --url without --publish", args: []string{"import", "codex", "--url", url, ex("imports/codex.jsonl")}, code: 2, want: "ponens import codex: --url is where --publish sends the events"},
		{name: "import --publish service down", args: []string{"import", "claude-code", "--publish", "--url", down, ex("imports/claude-code.jsonl")}, code: 3, want: "ponens import claude-code: connect to " + down},
		{name: "import claude-code --publish", args: []string{"import", "claude-code", "--publish", "--url", url, ex("imports/claude-code.jsonl")}, want: "published 11 events"},
		{name: "import codex", args: []string{"import", "codex", ex("imports/codex.jsonl")}, want: "skipped 2 event_msg, 1 ghost_snapshot"},
		{name: "import codex bad line", args: []string{"import", "codex", write("bad-rollout.jsonl", "{\"type\":\"session_meta\",\"payload\":{\"id\":\"s\"}}\n{oops\n")}, code: 2, want: "bad-rollout.jsonl:2:2: expected a JSON object (a rollout line)"},
		{name: "import langfuse", args: []string{"import", "langfuse", ex("imports/langfuse.json")}, want: `"type":"run.finish"`},
		{name: "import langfuse bad", args: []string{"import", "langfuse", ended}, code: 2, want: "ponens import langfuse: " + ended + ": expected a Langfuse trace"},
		{name: "import otlp", args: []string{"import", "otlp", ex("imports/otlp.json")}, want: "execute_tool span without gen_ai.tool.name"},
		{name: "import otlp bad --model-calls", args: []string{"import", "otlp", "--model-calls", "all", ex("imports/otlp.json")}, code: 2, want: `otlp.model_calls: expected telemetry, action or skip, got "all"`},
		{name: "import otlp --publish", args: []string{"import", "otlp", "--publish", "--url", url, ex("imports/otlp.json")}, want: "published 15 events"},
		{name: "hook", args: []string{"hook"}, want: "Available Commands:"},
		{name: "hook --install without rules", args: []string{"hook", "claude-code", "--install"}, code: 2, want: "ponens hook claude-code: --install: give the --rules the hook loads"},
		{name: "hook --url without --publish", args: []string{"hook", "claude-code", "--rules", ex("rules"), "--url", url}, code: 2, want: "ponens hook claude-code: --url is where --publish sends the events"},
		{name: "hook --dry-run without --install", args: []string{"hook", "claude-code", "--dry-run", "--rules", ex("rules")}, code: 2, want: "ponens hook claude-code: --dry-run is for --install"},
		{name: "watch claude-code service down", args: []string{"watch", "claude-code", "--url", down, work}, code: 3, want: "ponens watch claude-code: connect to " + down},
		{name: "watch codex no directory", args: []string{"watch", "codex", "--url", url, "/nonexistent"}, code: 2, want: "ponens watch codex: /nonexistent: expected a directory of sessions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "manifest" { // an invalid event through the gateway, for the dead-letter log line
				body := `{"v":1,"runId":"broken-1","seq":1,"ts":"2026-01-01T00:00:00Z","type":"action","action":{"id":1}}`
				resp, err := http.Post("http://"+gatewayAddr+"/v1/events", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			var r cliResult
			for try := 0; ; try++ {
				r = runBinary(t, work, tc.env, tc.args...)
				if r.code == tc.code || !tc.retry || try == 50 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			where := r.stderr
			if tc.code == 0 || tc.code == 1 {
				where = r.stdout + r.stderr
			}
			if r.code != tc.code || !strings.Contains(where, tc.want) {
				t.Errorf("ponens %s: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "hunter2") {
				t.Errorf("ponens %s printed the store.dsn password:\n%s%s", strings.Join(tc.args, " "), r.stdout, r.stderr)
			}
			if r.code >= 2 && !regexp.MustCompile(`(?m)^ponens( [a-z-]+)*: `).MatchString(r.stderr) {
				t.Errorf("ponens %s: the error has no \"ponens <command>: \" prefix: %q", strings.Join(tc.args, " "), r.stderr)
			}
		})
	}
	checkServeLog(t, serveLog)
}

// checkServeLog checks that the serve of TestCLIExitCodes logged the
// demo's violations at info and the gateway's dead letter at warn, one
// structured line each.
func checkServeLog(t *testing.T, log *syncBuffer) {
	t.Helper()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=violation rule=\S+ run=demo-1-\S+ agent=agent-00\d seq=\d+ mode=\w+$`),
		regexp.MustCompile(`(?m)^time=\S+ level=WARN msg="dead letter" reason=invalid run=broken-1 source=gateway error=`),
	} {
		var found bool
		for try := 0; try < 50 && !found; try++ {
			found = want.MatchString(log.String())
			if !found {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !found {
			t.Errorf("ponens serve logged no line matching %s:\n%s", want, log.String())
		}
	}
}

// commandPaths lists every visible command under root, as typed.
func commandPaths(root *cobra.Command) [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			out = append(out, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	return out
}

// TestCLIConfigRefused: every command refuses a --config file that does
// not exist, and one with an unknown key, the same way: exit 2 and a
// message naming the file (and the key's line).
func TestCLIConfigRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	work := t.TempDir()
	bad := filepath.Join(work, "bad.yaml")
	if err := os.WriteFile(bad, []byte("nats:\n  colour: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{ // arguments the command's own checks need, met before the configuration is read
		"check": {"x"}, "eval": {"x"}, "decide": {"x"}, "publish": {"x"}, "policy check": {"x"},
		"alerts subscribe": {"x", "--subject", "s"}, "alerts delete": {"x"}, "alerts test": {"x"}, "alerts silence": {"x", "--for", "1h"},
		"import codex": {"x"}, "import langfuse": {"x"}, "import otlp": {"x"}, "sql": {"SELECT 1"}, "run": {"x"},
	}
	paths := commandPaths(newRootCommand())
	if len(paths) < 15 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, p := range paths {
		name := "ponens " + strings.Join(p, " ")
		for _, c := range []struct{ file, want string }{
			{"/nonexistent.yaml", name + ": config: open /nonexistent.yaml: no such file or directory"},
			{bad, name + ": config: " + bad + `:2:3: unknown key "nats.colour"`},
		} {
			full := append(append(append([]string{}, p...), "--config", c.file), args[strings.Join(p, " ")]...)
			r := runBinary(t, work, nil, full...)
			if r.code != 2 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s --config %s: exit %d, stderr %q; want exit 2 and %q", name, c.file, r.code, r.stderr, c.want)
			}
		}
	}
}

// TestCLIHelp: every command's help has examples, shows a switch as
// --json and a value as --flag NAME, and cites nothing a user of this
// repository does not have.
func TestCLIHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	work := t.TempDir()
	typeNames := regexp.MustCompile(`--[a-z-]+ (string|int|uint|int64|float64|duration|stringArray|VALUE)\b`)
	history := regexp.MustCompile(`seed 00\d|§|DESIGN\.md|SEMANTICS\.md|session \d`)
	var examples []string
	for _, p := range append(commandPaths(newRootCommand()), nil) {
		r := runBinary(t, work, nil, append(p, "--help")...)
		name := strings.TrimSpace("ponens " + strings.Join(p, " "))
		switch {
		case r.code != 0:
			t.Errorf("%s --help: exit %d, %s", name, r.code, r.stderr)
		case !strings.Contains(r.stdout, "\nExamples:\n  ponens "):
			t.Errorf("%s --help has no Examples section:\n%s", name, r.stdout)
		case strings.Contains(r.stdout, "[=true|false]"):
			t.Errorf("%s --help shows a switch with [=true|false]:\n%s", name, r.stdout)
		case typeNames.MatchString(r.stdout):
			t.Errorf("%s --help names a value by its Go type: %q", name, typeNames.FindString(r.stdout))
		case history.MatchString(r.stdout):
			t.Errorf("%s --help cites %q", name, history.FindString(r.stdout))
		}
		examples = append(examples, helpExamples(r.stdout)...)
	}
	runOfflineExamples(t, examples)
}

// helpExamples are the command lines of a help text's Examples section.
func helpExamples(help string) []string {
	_, rest, ok := strings.Cut(help, "\nExamples:\n")
	if !ok {
		return nil
	}
	section, _, _ := strings.Cut(rest, "\n\n")
	var out []string
	for _, l := range strings.Split(section, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// runOfflineExamples runs, in a copy of the repository's examples with the
// binary on the PATH, every example that needs no running service and
// finishes at once: each must exit 0 or 1 (a rule violated or a step not
// allowed), never with a usage or input error.
func runOfflineExamples(t *testing.T, examples []string) {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "examples"), os.DirFS("../../examples")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Dir(ponensBinary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	online := regexp.MustCompile(`--url|--run|^ponens (serve|worker|demo|manifest|publish|ingest|bench|deadletters|alerts|alert|query|runs|run|rules)\b|shared-policies|PONENS_`)
	ran := 0
	for _, ex := range slices.Compact(slices.Sorted(slices.Values(examples))) {
		if online.MatchString(ex) {
			continue
		}
		ran++
		cmd := exec.Command("sh", "-c", ex)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); (ok && ee.ExitCode() > 1) || (err != nil && !ok) {
			t.Errorf("help example %q: %v\n%s", ex, err, out)
		}
	}
	if ran < 15 {
		t.Errorf("only %d help examples run", ran)
	}
}
