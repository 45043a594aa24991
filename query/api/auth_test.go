package api

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ponens/ponens/sink/chdb"
)

// With tokens configured, a request under /v1/ without a token, or with
// one that is not configured, is refused with 401 in the envelope; a
// configured token reads; the health checks need none.
func TestTokens(t *testing.T) {
	sum := sha256.Sum256([]byte("s3cret"))
	tok, ok := ParseToken("ci", hex.EncodeToString(sum[:]), "read")
	if !ok {
		t.Fatal("a valid token refused")
	}
	if _, ok := ParseToken("ci", "abc", "read"); ok {
		t.Error("a hash of 3 digits accepted")
	}
	if _, ok := ParseToken("ci", hex.EncodeToString(sum[:]), "write"); ok {
		t.Error("scope write accepted")
	}
	s, err := New(Options{Store: chdb.Querier{E: engine}, Tokens: []Token{tok}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, c := range []struct {
		name, path, auth string
		code             int
		want             string
	}{
		{"no token", "/v1/runs", "", 401, `"errorType":"unauthorized"`},
		{"not bearer", "/v1/runs", "Basic czNjcmV0", 401, `"errorType":"unauthorized"`},
		{"wrong token", "/v1/runs", "Bearer s3cret2", 401, "not one of query.tokens"},
		{"the token", "/v1/runs", "Bearer s3cret", 200, `"status":"success"`},
		{"the scheme in lower case", "/v1/runs", "bearer s3cret", 200, `"status":"success"`},
		{"another scheme", "/v1/runs", "Basic czNjcmV0", 401, "not a bearer token"},
		{"health without a token", "/healthz", "", 200, "ok"},
		{"metrics without a token", "/metrics", "", 401, `"errorType":"unauthorized"`},
		{"metrics with the token", "/metrics", "Bearer s3cret", 200, "ponens_query_requests_total"},
	} {
		req, _ := http.NewRequest("GET", ts.URL+c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want %d with %s", c.name, resp.StatusCode, body, c.code, c.want)
		}
	}
}
