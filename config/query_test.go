package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestQueryValidate(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		edit func(*QueryConfig)
		want string
	}{
		{"listen", func(q *QueryConfig) { q.Listen = "8090" }, `query.listen: must be host:port, got "8090"`},
		{"open without tokens", func(q *QueryConfig) { q.Listen = "0.0.0.0:8090" }, "query.listen: 0.0.0.0:8090 is not a loopback address, and query.tokens is empty"},
		{"hash", func(q *QueryConfig) { q.Tokens = []QueryToken{{SHA256: "secret", Scope: "read"}} }, `query.tokens[0].sha256: must be 64 hex digits (the SHA-256 of the token), got "secret"`},
		{"scope", func(q *QueryConfig) { q.Tokens = []QueryToken{{SHA256: hash, Scope: "write"}} }, `query.tokens[0].scope: must be read or admin, got "write"`},
		{"tls", func(q *QueryConfig) { q.TLS.CertFile = "c.pem" }, "query.tls: cert_file and key_file go together"},
		{"cors", func(q *QueryConfig) { q.CORSOrigins = []string{"example.com"} }, `query.cors_origins[0]: must be * or an origin such as https://host, got "example.com"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c.Query)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := Default()
	c.Query.Listen, c.Query.Tokens = "0.0.0.0:8090", []QueryToken{{SHA256: hash, Scope: "admin"}}
	if err := c.Validate(); err != nil {
		t.Errorf("tokens allow any address: %v", err)
	}
}

func TestQueryFromFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ponens.yaml")
	hash := strings.Repeat("0f", 32)
	data := "query:\n  listen: 127.0.0.1:9999\n  tokens:\n    - name: ci\n      sha256: " + hash + "\n      scope: read\n  tls:\n    cert_file: c.pem\n    key_file: k.pem\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := c.Query
	if q.Listen != "127.0.0.1:9999" || len(q.Tokens) != 1 || q.Tokens[0] != (QueryToken{Name: "ci", SHA256: hash, Scope: "read"}) || q.TLS.KeyFile != "k.pem" {
		t.Fatalf("query section: %+v", q)
	}
}
