package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"strings"
)

// QueryConfig is the query service (ponens query, and the service inside
// ponens serve): where it listens, who may ask it, and how.
type QueryConfig struct {
	// Listen is the host:port of the HTTP API.
	Listen string `mapstructure:"listen" yaml:"listen"`
	// Tokens are the bearer tokens the service accepts, each by its hash.
	// With none, the service needs no token and listens only on loopback.
	Tokens []QueryToken `mapstructure:"tokens" yaml:"tokens"`
	// TLS, when its files are set, serves HTTPS.
	TLS QueryTLS `mapstructure:"tls" yaml:"tls"`
	// CORSOrigins are the origins a browser on another site may read the
	// API from; empty allows none (no CORS header is sent).
	CORSOrigins []string `mapstructure:"cors_origins" yaml:"cors_origins"`
}

// QueryToken is one accepted bearer token: the hex SHA-256 of the token
// (`printf %s TOKEN | sha256sum` prints it) and its scope.
type QueryToken struct {
	// Name says whose token it is, for the logs.
	Name string `mapstructure:"name" yaml:"name"`
	// SHA256 is the hex SHA-256 of the token; the token itself is never
	// stored.
	SHA256 string `mapstructure:"sha256" yaml:"sha256"`
	// Scope is read (every GET) or admin (read, and the alert
	// subscriptions and silences).
	Scope string `mapstructure:"scope" yaml:"scope"`
}

// QueryTLS names the certificate and key the service serves HTTPS with.
type QueryTLS struct {
	CertFile string `mapstructure:"cert_file" yaml:"cert_file"`
	KeyFile  string `mapstructure:"key_file" yaml:"key_file"`
}

// DefaultQuery is the query section's defaults.
func DefaultQuery() QueryConfig {
	return QueryConfig{Listen: "127.0.0.1:8090"}
}

// validate checks the query section.
func (q QueryConfig) validate() []string {
	var errs []string
	host, _, err := net.SplitHostPort(q.Listen)
	if err != nil {
		errs = append(errs, fmt.Sprintf("query.listen: must be host:port, got %q", q.Listen))
	} else if len(q.Tokens) == 0 && !loopbackHost(host) {
		errs = append(errs, fmt.Sprintf("query.listen: %s is not a loopback address, and query.tokens is empty: set query.tokens (a name, the token's SHA-256 and a scope) to listen beyond this host", q.Listen))
	}
	for i, t := range q.Tokens {
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != 32 {
			errs = append(errs, fmt.Sprintf("query.tokens[%d].sha256: must be 64 hex digits (the SHA-256 of the token), got %q", i, t.SHA256))
		}
		if t.Scope != "read" && t.Scope != "admin" {
			errs = append(errs, fmt.Sprintf("query.tokens[%d].scope: must be read or admin, got %q", i, t.Scope))
		}
	}
	if (q.TLS.CertFile == "") != (q.TLS.KeyFile == "") {
		errs = append(errs, "query.tls: cert_file and key_file go together: set both or neither")
	}
	for i, o := range q.CORSOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			errs = append(errs, fmt.Sprintf("query.cors_origins[%d]: must be * or an origin such as https://host, got %q", i, o))
		}
	}
	return errs
}

// loopbackHost reports whether host names only this machine.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
