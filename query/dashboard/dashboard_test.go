package dashboard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ponens/ponens/query/dashboard"
)

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	body, _ := io.ReadAll(w.Result().Body)
	return w.Result(), string(body)
}

// Every page path answers the shell with the title; other paths answer it
// with 404; assets answer with their type; nothing else is served.
func TestHandlerRoutes(t *testing.T) {
	h := dashboard.New(dashboard.Options{Title: "fleet <one>"})
	for _, tc := range []struct {
		path, ctype string
		code        int
		has         string
	}{
		{"/", "text/html; charset=utf-8", 200, "<title>fleet &lt;one&gt;</title>"},
		{"/matrix", "text/html; charset=utf-8", 200, `src="/assets/app.js"`},
		{"/runs", "text/html; charset=utf-8", 200, `id="main"`},
		{"/runs/demo-agent-000-run-0001", "text/html; charset=utf-8", 200, `id="main"`},
		{"/rules/tests_before_commit", "text/html; charset=utf-8", 200, `id="main"`},
		{"/deadletters", "text/html; charset=utf-8", 200, `id="main"`},
		{"/subscriptions", "text/html; charset=utf-8", 200, `id="main"`},
		{"/runs/", "text/html; charset=utf-8", 404, `id="main"`},
		{"/nope", "text/html; charset=utf-8", 404, `id="main"`},
		{"/assets/app.js", "text/javascript; charset=utf-8", 200, "import"},
		{"/assets/style.css", "text/css; charset=utf-8", 200, "--violated"},
		{"/assets/favicon.svg", "image/svg+xml", 200, "<svg"},
		{"/assets/pages/run.js", "text/javascript; charset=utf-8", 200, "highlighted"},
		{"/assets/index.html", "text/plain; charset=utf-8", 404, "no asset"},
		{"/assets/missing.js", "text/plain; charset=utf-8", 404, "no asset /assets/missing.js"},
	} {
		resp, body := get(t, h, http.MethodGet, tc.path)
		if resp.StatusCode != tc.code || resp.Header.Get("Content-Type") != tc.ctype || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s: %d %q, want %d %q containing %q; body %.120q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.ctype, tc.has, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
	}
	if resp, _ := get(t, h, http.MethodPost, "/"); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if resp, body := get(t, h, http.MethodHead, "/matrix"); resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD /matrix: %d with %d bytes", resp.StatusCode, len(body))
	}
}

// An asset is revalidated by its entity tag: the same tag answers 304.
func TestAssetETag(t *testing.T) {
	h := dashboard.New(dashboard.Options{})
	resp, _ := get(t, h, http.MethodGet, "/assets/ui.js")
	tag := resp.Header.Get("ETag")
	if tag == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", tag, resp.Header.Get("Cache-Control"))
	}
	if resp, body := get(t, h, http.MethodGet, "/assets/ui.js", "If-None-Match", tag); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("with If-None-Match: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, h, http.MethodGet, "/assets/chart.js", "If-None-Match", tag); resp.StatusCode != http.StatusOK {
		t.Errorf("another asset with the tag: %d", resp.StatusCode)
	}
}
