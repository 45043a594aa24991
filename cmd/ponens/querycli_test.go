package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/sink/chdb"
)

// runCLI runs ponens with args in this process and returns what it
// printed and its exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.code
		errOut.WriteString(ee.msg)
	default:
		code = -1
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// apiData GETs u (with the bearer token, when given) and decodes its
// envelope's data into out.
func apiData(t *testing.T, u, token string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %v %s", u, resp.Status, err, body)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatal(err)
	}
}

// csvRows parses CSV output, header first.
func csvRows(t *testing.T, s string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("not CSV with a header (%v):\n%s", err, s)
	}
	return rows
}

// ponens runs, run and rules against the real query service on loopback,
// over the embedded store `ponens check --store` filled: each output
// holds what the API answers, a token is sent, and the service's refusals
// are exit 2 or 3 naming the cause.
func TestQueryCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded store")
	}
	work := t.TempDir()
	store := filepath.Join(work, "store")
	if _, errOut, code := runCLI(t, "check", "--rules", "../../examples/rules", "--store", store, "--out", filepath.Join(work, "out"), "../../examples/traces"); code != exitViolated {
		t.Fatalf("check --store: exit %d\n%s", code, errOut)
	}
	e, err := chdb.Open(chdb.Options{Path: store})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	set, probs := ruleset.Load("../../examples/rules")
	if probs != nil {
		t.Fatal(probs)
	}
	cfg := config.Default()
	sum := sha256.Sum256([]byte("s3cret"))
	cfg.Query.Tokens = []config.QueryToken{{Name: "ci", SHA256: hex.EncodeToString(sum[:]), Scope: "read"}}
	qs, err := queryServer(cfg, set, chdb.Querier{E: e}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(qs.Handler())
	defer web.Close()
	srv := []string{"--server", web.URL, "--token", "s3cret"}

	var violated api.RunPage
	apiData(t, web.URL+"/v1/runs?status=violated", "s3cret", &violated)
	out, errOut, code := runCLI(t, append([]string{"runs", "--status", "violated", "--output", "csv"}, srv...)...)
	rows := csvRows(t, out)
	if code != 0 || len(violated.Runs) == 0 || len(rows) != len(violated.Runs)+1 || rows[0][0] != "RUN" {
		t.Fatalf("runs --status violated: exit %d, %d rows for %d violated runs\n%s%s", code, len(rows)-1, len(violated.Runs), out, errOut)
	}
	for i, r := range violated.Runs {
		if rows[i+1][0] != r.RunID || rows[i+1][6] != "violated" || rows[i+1][7] != strings.Join(r.Violated, " ") {
			t.Errorf("runs row %d: %v, the API %+v", i+1, rows[i+1], r)
		}
	}
	var all, printed api.RunPage
	apiData(t, web.URL+"/v1/runs", "s3cret", &all)
	out, _, _ = runCLI(t, append([]string{"runs", "--output", "json"}, srv...)...)
	if err := json.Unmarshal([]byte(out), &printed); err != nil || !reflect.DeepEqual(printed, all) {
		t.Errorf("runs --output json: %v\n%s\nthe API: %+v", err, out, all)
	}
	// CSV cells are the API's values: an empty one stays empty.
	out, _, _ = runCLI(t, append([]string{"runs", "--output", "csv"}, srv...)...)
	rows = csvRows(t, out)
	for i, r := range all.Runs {
		if i+1 >= len(rows) || rows[i+1][1] != r.Agent || rows[i+1][2] != r.Project || rows[i+1][4] != r.Outcome || rows[i+1][7] != strings.Join(r.Violated, " ") {
			t.Errorf("runs --output csv row %d: %v, the API %+v", i+1, rows[min(i+1, len(rows)-1)], r)
		}
	}

	run := violated.Runs[0].RunID
	var detail api.RunDetail
	var timeline api.Timeline
	apiData(t, web.URL+"/v1/runs/"+run, "s3cret", &detail)
	apiData(t, web.URL+"/v1/runs/"+run+"/timeline", "s3cret", &timeline)
	out, _, code = runCLI(t, append([]string{"run", run}, srv...)...)
	if code != 0 || !strings.Contains(out, "run      "+run+"\n") || !strings.Contains(out, "status   violated, ") {
		t.Errorf("run %s: exit %d\n%s", run, code, out)
	}
	for _, r := range detail.Rules {
		if !tableLine(out, r.RuleID, string(r.Mode), string(r.Status)) {
			t.Errorf("run %s: no line for rule %s %s %s\n%s", run, r.RuleID, r.Mode, r.Status, out)
		}
	}
	var view runView
	out, _, _ = runCLI(t, append([]string{"run", run, "--output", "json"}, srv...)...)
	if err := json.Unmarshal([]byte(out), &view); err != nil || !reflect.DeepEqual(view.Run, detail) || compact(t, view.Timeline) != compact(t, timeline) {
		t.Errorf("run --output json: %v\n%s", err, out)
	}
	out, _, _ = runCLI(t, append([]string{"run", run, "--output", "csv"}, srv...)...)
	if rows := csvRows(t, out); len(rows) != len(timeline.Events)+1 {
		t.Errorf("run --output csv: %d rows for %d events", len(rows)-1, len(timeline.Events))
	}

	var rules struct {
		Rules []api.RuleCounts `json:"rules"`
	}
	apiData(t, web.URL+"/v1/rules", "s3cret", &rules)
	out, _, _ = runCLI(t, append([]string{"rules", "--output", "csv"}, srv...)...)
	rows = csvRows(t, out)
	if len(rows) != len(rules.Rules)+1 {
		t.Fatalf("rules: %d rows for %d rules\n%s", len(rows)-1, len(rules.Rules), out)
	}
	for i, r := range rules.Rules {
		if got, want := strings.Join(rows[i+1], ","), strings.Join([]string{r.RuleID, string(r.Mode), u64(r.Runs), u64(r.Violated), u64(r.Pending), u64(r.Unresolved), u64(r.Satisfied)}, ","); got != want {
			t.Errorf("rules row %d: %s, the API %s", i+1, got, want)
		}
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"runs", "--server", web.URL}, exitBadInput, "give the token in PONENS_QUERY_TOKEN"},
		{[]string{"runs", "--server", web.URL, "--token", "wrong"}, exitBadInput, "not one of query.tokens"},
		{append([]string{"run", "no-such-run"}, srv...), exitBadInput, "not_found"},
		{append([]string{"runs", "--status", "bad"}, srv...), exitBadInput, "parameter status"},
		{append([]string{"rules", "--output", "xml"}, srv...), exitBadInput, "--output"},
		{[]string{"rules", "--server", "http://" + freeAddr(t)}, exitUnavailable, "did not answer"},
	} {
		if _, errOut, code := runCLI(t, c.args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("ponens %v: exit %d %q, want %d with %q", c.args, code, errOut, c.code, c.want)
		}
	}
	t.Setenv("PONENS_QUERY_TOKEN", "s3cret")
	if _, errOut, code := runCLI(t, "runs", "--server", web.URL); code != 0 {
		t.Errorf("runs with PONENS_QUERY_TOKEN: exit %d %s", code, errOut)
	}
}

// compact is v as compact JSON (raw JSON inside v compacted too).
func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatal(err)
	}
	return c.String()
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }

// tableLine reports whether some line of out starts with the cells
// words, as a table aligns them.
func tableLine(out string, words ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= len(words) && slices.Equal(f[:len(words)], words) {
			return true
		}
	}
	return false
}
