package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/query/api"
	"github.com/ponens/ponens/query/dashboard"
	"github.com/ponens/ponens/sink/chdb"
)

// subscriptionsOf reads GET /v1/subscriptions and /v1/silences of the
// service at base.
func subscriptionsOf(t *testing.T, base string) ([]alert.SubscriptionState, []alert.Silence) {
	t.Helper()
	var subs struct {
		Data struct {
			Subscriptions []alert.SubscriptionState `json:"subscriptions"`
		} `json:"data"`
	}
	var sil struct {
		Data struct {
			Silences []alert.Silence `json:"silences"`
		} `json:"data"`
	}
	for path, out := range map[string]any{"/v1/subscriptions": &subs, "/v1/silences": &sil} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
	}
	return subs.Data.Subscriptions, sil.Data.Silences
}

// The subscriptions page, over the real query service with the alerts
// bucket of a fleet whose alert stage delivered its violations, shows
// each subscription /v1/subscriptions lists with the delivered,
// dead-lettered and rate-limited counts and the last status the API
// gives it, and each silence of /v1/silences, without a console error.
func TestBrowserSubscriptionsPage(t *testing.T) {
	b := newBrowser(t)
	f := startFleet(t)
	srv, err := api.New(api.Options{Store: chdb.Querier{E: f.store}, Alerts: alert.Store{KV: f.kv}, UI: dashboard.New(dashboard.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	// The alert stage may still be delivering: wait for two equal answers
	// a second apart, with the webhook's deliveries done.
	var subs []alert.SubscriptionState
	var sil []alert.Silence
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		now, s := subscriptionsOf(t, web.URL)
		if len(now) == 2 && now[1].ID == "ops" && now[1].Delivery.Delivered > 0 && reflect.DeepEqual(now, subs) {
			sil = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscriptions did not settle: %+v", now)
		}
		subs = now
	}
	if len(sil) != 1 || sil[0].ID != "quiet-agent" {
		t.Fatalf("API silences %+v, want quiet-agent", sil)
	}

	b.open(web.URL + "/subscriptions")
	b.waitFor("the subscriptions table", `document.querySelectorAll('[data-k=subscriptions] tr[data-row]').length > 0`, 10*time.Second)
	shown := b.rows("[data-k=subscriptions]")
	if len(shown) != len(subs) {
		t.Errorf("the page shows %d subscriptions, the API lists %d", len(shown), len(subs))
	}
	for _, s := range subs {
		row, ok := shown[s.ID]
		lastStatus := "nothing sent yet"
		switch {
		case s.Delivery.LastStatus != 0:
			lastStatus = "HTTP " + strconv.Itoa(s.Delivery.LastStatus)
		case !s.Delivery.LastAt.IsZero():
			lastStatus = "delivered"
		}
		switch {
		case !ok:
			t.Errorf("subscription %s: not on the page", s.ID)
		case row["delivered"] != strconv.Itoa(s.Delivery.Delivered) || row["dead"] != strconv.Itoa(s.Delivery.Dead) || row["limited"] != strconv.Itoa(s.Delivery.RateLimited):
			t.Errorf("subscription %s: page %v, API %+v", s.ID, row, s.Delivery)
		case row["last-status"] != lastStatus:
			t.Errorf("subscription %s: page last status %q, API %+v", s.ID, row["last-status"], s.Delivery)
		}
	}
	if n := subs[1].Delivery.LastAttempts; n > 1 && shown["ops"]["last-attempts"] != "· "+strconv.Itoa(n)+" attempts" {
		t.Errorf("ops: page attempts %q, API %d", shown["ops"]["last-attempts"], n)
	}
	silences := b.rows("[data-k=silences]")
	if row, ok := silences["quiet-agent"]; !ok || row["state"] != "active" {
		t.Errorf("silences on the page %v, want quiet-agent active", silences)
	}
	b.clean("/subscriptions")
	b.screenshot("subscriptions")
}
