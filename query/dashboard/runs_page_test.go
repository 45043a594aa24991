package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/query/dashboard"
	"github.com/ponens/ponens/sink/chdb"
)

// The runs page, over the real query service and a fleet stored by the
// real pipeline, shows each run the API lists with the agent, outcome,
// event count and status the API gives it, and no console error.
func TestBrowserRunsPage(t *testing.T) {
	b := newBrowser(t)
	f := startFleet(t)
	srv, err := api.New(api.Options{Store: chdb.Querier{E: f.store}, UI: dashboard.New(dashboard.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	resp, err := http.Get(web.URL + "/v1/runs?since=24h&limit=50")
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Data struct {
			Runs []struct {
				RunID   string `json:"runId"`
				Agent   string `json:"agent"`
				Outcome string `json:"outcome"`
				Events  int    `json:"events"`
				Status  string `json:"status"`
			} `json:"runs"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || len(answer.Data.Runs) != len(f.runs) {
		t.Fatalf("API runs: %d of %d (%v)", len(answer.Data.Runs), len(f.runs), err)
	}

	b.open(web.URL + "/runs?since=24h")
	b.waitFor("the runs table", `document.querySelectorAll('tr[data-row]').length > 0`, 10*time.Second)
	shown := b.rows("[data-k=runs]")
	if len(shown) != len(answer.Data.Runs) {
		t.Errorf("the page shows %d runs, the API lists %d", len(shown), len(answer.Data.Runs))
	}
	for _, r := range answer.Data.Runs {
		if r.Outcome == "" {
			r.Outcome = "–" // the page's mark of no value: an open run has no outcome
		}
		row, ok := shown[r.RunID]
		switch {
		case !ok:
			t.Errorf("run %s: not on the page", r.RunID)
		case row["agent"] != r.Agent || row["outcome"] != r.Outcome || row["events"] != strconv.Itoa(r.Events):
			t.Errorf("run %s: page %v, API agent %q outcome %q events %d", r.RunID, row, r.Agent, r.Outcome, r.Events)
		case !containsWord(row["status"], r.Status):
			t.Errorf("run %s: page status %q, API %q", r.RunID, row["status"], r.Status)
		}
	}
	b.clean("/runs")
	b.screenshot("runs")
}

// containsWord tells whether text ends with word (a badge is a glyph
// followed by its status).
func containsWord(text, word string) bool {
	return word != "" && len(text) >= len(word) && text[len(text)-len(word):] == word
}
