package dashboard_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ponens/ponens/query/dashboard"
)

// A path that is no page renders the "no such page" notice in a real
// browser, with no console error but the 404 of the page itself.
func TestBrowserNotFoundPage(t *testing.T) {
	b := newBrowser(t)
	srv := httptest.NewServer(dashboard.New(dashboard.Options{}))
	defer srv.Close()
	b.open(srv.URL + "/nope")
	if got := b.text("[data-k=error]"); !strings.Contains(got, "/nope is not a page of the dashboard") {
		t.Errorf("not-found notice: %q", got)
	}
	b.clean("/nope", "status of 404")
	b.screenshot("not-found")
}
