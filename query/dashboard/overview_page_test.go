package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/query/dashboard"
	"github.com/ponens/ponens/sink/chdb"
)

// The overview, over the real query service and a fleet stored by the
// real pipeline, shows the figures /v1/fleet answers: runs by state, the
// violations (in total and per bar of the chart), the top violated rules
// and the agents by compliance; the live feed says the service does not
// stream, and the page writes nothing to the console.
func TestBrowserOverviewPage(t *testing.T) {
	b := newBrowser(t)
	f := startFleet(t)
	srv, err := api.New(api.Options{Store: chdb.Querier{E: f.store}, UI: dashboard.New(dashboard.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	resp, err := http.Get(web.URL + "/v1/fleet?since=24h&step=1h")
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Data api.Fleet `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	fl := answer.Data
	if err != nil || fl.Runs.Total != uint64(len(f.runs)) || len(fl.TopRules) == 0 || len(fl.Agents) != 4 {
		t.Fatalf("API fleet: %+v (%v), want the %d runs of 4 agents with violations", fl, err, len(f.runs))
	}

	b.open(web.URL + "/?since=24h")
	b.waitFor("the agents table", `document.querySelectorAll('[data-k=agents] tr[data-row]').length > 0`, 10*time.Second)
	var violations uint64
	for _, p := range fl.ViolationsOverTime {
		violations += p.Violations
	}
	for k, want := range map[string]string{
		"runs-total": strconv.FormatUint(fl.Runs.Total, 10), "runs-open": strconv.FormatUint(fl.Runs.Open, 10), "runs-ended": strconv.FormatUint(fl.Runs.Ended, 10),
		"violations-total": strconv.FormatUint(violations, 10), "agents-count": strconv.Itoa(len(fl.Agents)), "feed-state": "off",
	} {
		if got := b.text("[data-k=" + k + "]"); got != want {
			t.Errorf("%s: the page shows %q, the API %q", k, got, want)
		}
	}
	var bars map[string]uint64
	b.eval(`Object.fromEntries([...document.querySelectorAll('[data-k=violations-series] rect[data-t]')].filter((r) => Number(r.dataset.v) > 0).map((r) => [r.dataset.t, Number(r.dataset.v)]))`, &bars)
	if len(bars) != len(fl.ViolationsOverTime) {
		t.Errorf("the chart has %d bars with violations, the API %d buckets: %v", len(bars), len(fl.ViolationsOverTime), bars)
	}
	for _, p := range fl.ViolationsOverTime {
		if bars[p.T] != p.Violations {
			t.Errorf("bar %s: %d on the page, %d from the API", p.T, bars[p.T], p.Violations)
		}
	}
	rules := b.rows("[data-k=top-rules]")
	for _, r := range fl.TopRules {
		if row := rules[r.RuleID]; row["violations"] != strconv.FormatUint(r.Violations, 10) || row["runs"] != strconv.FormatUint(r.Runs, 10) {
			t.Errorf("top rule %s: page %v, API %d violations on %d runs", r.RuleID, row, r.Violations, r.Runs)
		}
	}
	agents := b.rows("[data-k=agents]")
	for _, a := range fl.Agents {
		want := map[string]string{"agent": a.Agent, "runs": strconv.FormatUint(a.Runs, 10), "violating": strconv.FormatUint(a.Violating, 10), "compliance": fmt.Sprintf("%.1f%%", a.Compliance*100)}
		if row := agents[a.Agent]; fmt.Sprint(row) != fmt.Sprint(want) {
			t.Errorf("agent %s: page %v, API %v", a.Agent, row, want)
		}
	}
	b.clean("/")
	b.screenshot("overview")
}

// The matrix page shows, for each of the newest runs and each rule, the
// cell summary.json of those runs gives, and no console error.
func TestBrowserMatrixPage(t *testing.T) {
	b := newBrowser(t)
	f := startFleet(t)
	srv, err := api.New(api.Options{Store: chdb.Querier{E: f.store}, UI: dashboard.New(dashboard.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	sel := "run=" + f.runs[0].ID
	for _, r := range f.runs[1:] {
		sel += "&run=" + r.ID
	}
	resp, err := http.Get(web.URL + "/v1/summary?" + sel)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Matrix struct {
			Rules  []string   `json:"rules"`
			Traces []string   `json:"traces"`
			Cells  [][]string `json:"cells"`
		} `json:"matrix"`
	}
	err = json.NewDecoder(resp.Body).Decode(&sum)
	resp.Body.Close()
	if err != nil || len(sum.Matrix.Traces) != len(f.runs) {
		t.Fatalf("API summary: %d traces (%v)", len(sum.Matrix.Traces), err)
	}
	b.open(web.URL + "/matrix?since=24h")
	b.waitFor("the matrix", `document.querySelectorAll('[data-k=matrix] tr[data-row]').length > 0`, 10*time.Second)
	var shown map[string]map[string]string // run → rule → status
	b.eval(`Object.fromEntries([...document.querySelectorAll('[data-k=matrix] tr[data-row]')].map((tr) =>
		[tr.dataset.row, Object.fromEntries([...tr.querySelectorAll('td[data-rule]')].map((td) => [td.dataset.rule, td.dataset.status || '']))]))`, &shown)
	if len(shown) != len(f.runs) {
		t.Errorf("the matrix shows %d runs, the fleet has %d", len(shown), len(f.runs))
	}
	for j, run := range sum.Matrix.Traces {
		for i, rule := range sum.Matrix.Rules {
			if got := shown[run][rule]; got != sum.Matrix.Cells[i][j] {
				t.Errorf("%s × %s: the page shows %q, the summary %q", rule, run, got, sum.Matrix.Cells[i][j])
			}
		}
	}
	b.clean("/matrix")
	b.screenshot("matrix")
}

// The dead-letters page lists the rows /v1/deadletters answers, with
// their reason, source and error, and counts them; no console error.
func TestBrowserDeadLettersPage(t *testing.T) {
	b := newBrowser(t)
	f := startFleet(t)
	if _, err := f.store.Query([]byte(`INSERT INTO dead_letters (stream_seq, ts, subject, reason, source, error, body, truncated) VALUES
 (1000001, now64(3) - INTERVAL 2 HOUR, 'ponens.events.dash-x', 'invalid', 'gateway', 'seq: expected a number', '{"v":1,"seq":"x"}', 0),
 (1000002, now64(3) - INTERVAL 1 HOUR, 'ponens.events.dash-y', 'duplicate_key', 'worker', 'key "a" <b>twice</b>', '{"a":1,"a":2}', 0)`), "CSV"); err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Options{Store: chdb.Querier{E: f.store}, UI: dashboard.New(dashboard.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	resp, err := http.Get(web.URL + "/v1/deadletters?since=24h&limit=200")
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Data api.DeadLetterPage `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || len(answer.Data.DeadLetters) < 2 {
		t.Fatalf("API dead letters: %+v (%v)", answer.Data, err)
	}
	b.open(web.URL + "/deadletters?since=24h")
	b.waitFor("the dead letters", `document.querySelectorAll('[data-k=deadletters] tr[data-row]').length > 0`, 10*time.Second)
	if got := b.text("[data-k=count]"); got != strconv.Itoa(len(answer.Data.DeadLetters)) {
		t.Errorf("count: the page shows %q, the API lists %d", got, len(answer.Data.DeadLetters))
	}
	shown := b.rows("[data-k=deadletters]")
	for _, d := range answer.Data.DeadLetters {
		row := shown[strconv.FormatUint(d.StreamSeq, 10)]
		if row["reason"] != d.Reason || row["source"] != d.Source || row["error-text"] != d.Error {
			t.Errorf("dead letter %d: page %v, API %+v", d.StreamSeq, row, d)
		}
	}
	b.clean("/deadletters")
	b.screenshot("deadletters")
}
