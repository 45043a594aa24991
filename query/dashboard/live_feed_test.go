package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/internal/fleet"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/query/dashboard"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink/chdb"
)

// The overview's live feed, over a query service that follows the
// fleet's NATS server, goes live and shows each violation published after
// the page opened: as many feed items for the new runs as violated
// verdicts they got, and no console error.
func TestBrowserLiveFeed(t *testing.T) {
	b := newBrowser(t)
	f := startFleet(t)
	srv, err := api.New(api.Options{Store: chdb.Querier{E: f.store}, Live: api.NATSLive{Conn: f.nc, Subjects: subjects}, UI: dashboard.New(dashboard.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	// The page's stream stays open: Close alone would wait for it.
	defer func() { web.CloseClientConnections(); web.Close() }()
	var violated atomic.Int64
	sub, err := f.nc.Subscribe(subjects.VerdictsIn(), func(m *nats.Msg) {
		var v schema.VerdictEvent
		if json.Unmarshal(m.Data, &v) == nil && strings.HasPrefix(v.RunID, "live-") && v.Status == schema.StatusViolated {
			violated.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	// The store is the process's, shared with the other pages' tests, which
	// count the fleet's runs: the live runs leave it when this test ends.
	t.Cleanup(func() { f.forget(t, "live-") })

	b.open(web.URL + "/?since=24h")
	b.waitFor("the live feed", `document.querySelector('[data-k=feed-state]')?.dataset.state === 'live'`, 10*time.Second)
	for _, r := range fleet.Generate(fleet.Config{Agents: 2, RunsPerAgent: 2, Steps: 5, Violations: 1, Seed: 21, RunPrefix: "live-"}) {
		f.publish(t, r.Events, time.Now().UTC())
	}
	deadline := time.Now().Add(20 * time.Second)
	for violated.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the workers' last verdicts of these runs
	want := violated.Load()
	if want == 0 {
		t.Fatal("the new runs got no violated verdict")
	}
	b.waitFor(fmt.Sprintf("%d live violations", want),
		fmt.Sprintf(`document.querySelectorAll('[data-k=feed] .feed-item[data-run^="live-"]').length === %d`, want), 10*time.Second)
	if got := b.text("[data-k=feed-count]"); got != fmt.Sprint(want) {
		t.Errorf("the feed counts %s, %d violations were published", got, want)
	}
	b.clean("/")
	b.screenshot("live-feed")
}

// forget waits until the sink stored what was published, then deletes the
// runs whose ids start with prefix from the tables the runs pages read.
func (f *testFleet) forget(t *testing.T, prefix string) {
	f.waitStored(t)
	for _, table := range []string{"events", "verdicts", "run_rule_status", "runs"} {
		q := fmt.Sprintf("ALTER TABLE %s DELETE WHERE startsWith(run_id, '%s') SETTINGS mutations_sync = 1", table, prefix)
		if _, err := f.store.Query([]byte(q), ""); err != nil {
			t.Errorf("forgetting the %s runs: %v", prefix, err)
		}
	}
}
