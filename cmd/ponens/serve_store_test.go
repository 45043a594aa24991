package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveUntil runs `ponens serve` with the example rules in dir, with env
// and extra arguments, until it prints a line starting with until, then
// stops it with SIGINT; it returns its output.
func serveUntil(t *testing.T, dir string, env []string, until string, args ...string) (stdout, stderr string) {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	args = append([]string{"serve", "--rules", filepath.Join(repo, "examples", "rules"), "--listen", freeAddr(t), "--http", freeAddr(t), "--query", freeAddr(t)}, args...)
	cmd := exec.Command(ponensBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var errOut syncBuffer
	cmd.Stderr = &errOut
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	found := false
	for !found && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		found = strings.HasPrefix(sc.Text(), until)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	_ = cmd.Wait()
	if !found {
		t.Fatalf("ponens serve printed no line starting with %q:\n%s\n%s", until, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// ponens serve stores the verdicts and events it makes in the embedded
// store: the demo's verdicts are all there once serve stopped.
func TestServeStores(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	work := t.TempDir()
	conf := filepath.Join(work, "ponens.yaml")
	if err := os.WriteFile(conf, []byte("store:\n  flush_every: 100ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := serveUntil(t, work, nil, "look ", "--config", conf, "--demo", "--agents", "3", "--runs", "2")
	m := regexp.MustCompile(`(?m)^verdicts  (\d+) satisfied, (\d+) pending, (\d+) violated, (\d+) unresolved`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "store     data/store (embedded)") {
		t.Fatalf("serve output:\n%s\n%s", out, errOut)
	}
	total := 0
	for _, n := range m[1:] {
		k, _ := strconv.Atoi(n)
		total += k
	}
	r := runBinary(t, work, nil, "sql", "--format", "csv", "SELECT count() FROM verdicts FINAL WHERE run_id LIKE 'demo-%'")
	if got := lastLine(r.stdout); got != strconv.Itoa(total) {
		t.Fatalf("stored verdicts: %q, want %d (the demo's)\n%s", got, total, r.stderr)
	}
}

// Without the engine's library, serve says how to install it, in one log
// line, and runs without the store.
func TestServeWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	out, errOut := serveUntil(t, t.TempDir(), []string{"PONENS_CHDB_LIB=/nonexistent/libchdb.so"}, "gateway ")
	if strings.Contains(out, "store     ") {
		t.Errorf("serve says it stores without the engine:\n%s", out)
	}
	warn := regexp.MustCompile(`(?m)^time=\S+ level=WARN msg="running without the store and the query service \(ponens sql reads the store\)" err=".*not installed.*make deps`)
	if n := len(warn.FindAllString(errOut, -1)); n != 1 {
		t.Errorf("want one log line saying how to install the engine, got %d:\n%s", n, errOut)
	}
}

// TestServeMetrics: the gateway of `ponens serve` serves the sink's
// metrics beside its own at /metrics: after a publish, the events counted
// stored by the gateway and the rows the sink committed from both streams.
func TestServeMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	work := t.TempDir()
	url, gatewayAddr, errOut := startServe(t, work)
	traces, _ := filepath.Abs("../../examples/traces")
	if r := runBinary(t, work, nil, "publish", "--url", url, traces); r.code != 0 {
		t.Fatalf("publish: exit %d %s", r.code, r.stderr)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ponens_store_rows_total\{stream="verdicts"\} [1-9]`),
		regexp.MustCompile(`(?m)^ponens_store_rows_total\{stream="events"\} [1-9]`),
		regexp.MustCompile(`(?m)^ponens_stream_messages\{stream="EVENTS"\} `),
	}
	var text string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + gatewayAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(data)
		missing := false
		for _, re := range want {
			missing = missing || !re.MatchString(text)
		}
		if !missing {
			return
		}
	}
	t.Errorf("/metrics lacks the sink's rows or the streams' gauges:\n%s\nserve:\n%s", text, errOut.String())
}

// TestServeQueryService: `ponens serve` runs the query service over its
// store: after a publish of the example traces, /v1/runs lists each of
// their five runs, a run's verdicts answer as JSON lines, / is the dashboard
// and /metrics counts the requests beside the gateway's metrics.
func TestServeQueryService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	work := t.TempDir()
	queryAddr := freeAddr(t)
	url, _, errOut := startServe(t, work, "PONENS_QUERY_LISTEN="+queryAddr, "PONENS_STORE_FLUSH_EVERY=100ms")
	traces, _ := filepath.Abs("../../examples/traces")
	if r := runBinary(t, work, nil, "publish", "--url", url, traces); r.code != 0 {
		t.Fatalf("publish: exit %d %s", r.code, r.stderr)
	}
	type runsAnswer struct {
		Status string `json:"status"`
		Data   struct {
			Runs []struct {
				RunID string `json:"runId"`
			} `json:"runs"`
		} `json:"data"`
	}
	var got runsAnswer
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + queryAddr + "/v1/runs?limit=1000")
		if err == nil {
			got = runsAnswer{}
			_ = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
		}
		ids := map[string]bool{}
		for _, r := range got.Data.Runs {
			ids[r.RunID] = true
		}
		// examples/traces: two reference traces and fleet.jsonl's three runs.
		if got.Status == "success" && len(ids) == 5 && ids["fleet-run-1"] && ids["fleet-run-3"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("query service: %+v\nserve: %s", got, errOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	run := "fleet-run-1"
	resp, err := http.Get("http://" + queryAddr + "/v1/runs/" + run + "/verdicts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"runId":"`+run+`"`) {
		t.Fatalf("verdicts of %s: %d %s", run, resp.StatusCode, body)
	}
	// The dashboard at /, /metrics with the service's request counts
	// beside the gateway's metrics (one registry), and the subscriptions
	// of the alerts bucket.
	for path, wants := range map[string][]string{
		"/":        {`src="/assets/app.js"`},
		"/metrics": {`ponens_query_requests_total{code="200",route="GET /v1/runs/{run}/verdicts"} 1`, "ponens_gateway_events_total"},
		// serve hands the query service its alerts bucket.
		"/v1/subscriptions": {`{"status":"success","data":{"subscriptions":[]}}`},
	} {
		resp, err := http.Get("http://" + queryAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range wants {
			if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
				t.Errorf("GET %s: %d, without %q", path, resp.StatusCode, want)
			}
		}
	}
}

// TestServeQueryPortInUse: a query.listen address another process holds
// is a bad setting (exit 2, naming it), found before the pipeline starts.
func TestServeQueryPortInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	work := t.TempDir()
	rules, _ := filepath.Abs("../../examples/rules")
	r := runBinary(t, work, nil, "serve", "--rules", rules, "--listen", freeAddr(t), "--http", freeAddr(t),
		"--store", filepath.Join(work, "store"), "--query", held.Addr().String())
	if r.code != exitBadInput || !strings.Contains(r.stderr, "query.listen") || !strings.Contains(r.stderr, held.Addr().String()) {
		t.Fatalf("exit %d, want %d naming query.listen and %s:\n%s", r.code, exitBadInput, held.Addr(), r.stderr)
	}
}
