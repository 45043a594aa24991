package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// The scopes of a token: read reaches every GET route; admin reaches those
// and the writes of the alert subscriptions and silences.
const (
	ScopeRead  = "read"
	ScopeAdmin = "admin"
)

// Token is one accepted bearer token, by the SHA-256 of its text: the
// token itself is never held.
type Token struct {
	Name   string
	SHA256 [32]byte
	// Scope is ScopeRead or ScopeAdmin.
	Scope string
}

// ParseToken is the Token of a configured name, hex SHA-256 and scope
// (read or admin).
func ParseToken(name, sha256Hex, scope string) (Token, bool) {
	b, err := hex.DecodeString(sha256Hex)
	if err != nil || len(b) != sha256.Size || (scope != ScopeRead && scope != ScopeAdmin) {
		return Token{}, false
	}
	t := Token{Name: name, Scope: scope}
	copy(t.SHA256[:], b)
	return t, true
}

// tokenKey is the context key of the token a request was let in with.
type tokenKey struct{}

// authorize wraps next so that, when tokens are configured, every request
// under /v1/ and to /metrics (which counts the process's work) carries
// `Authorization: Bearer <token>` whose SHA-256 is one of them; the token
// is in the request's context for the routes that need a scope
// (requireAdmin). The health checks, /openapi.json and the dashboard's
// pages stay open: the pages ask for a token before they read the API.
func authorize(tokens []Token, next http.Handler) http.Handler {
	if len(tokens) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") && r.URL.Path != "/metrics" {
			next.ServeHTTP(w, r)
			return
		}
		given, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ponens"`)
			msg := "this service requires a token: send Authorization: Bearer <token>"
			if r.Header.Get("Authorization") != "" {
				msg = "the Authorization header is not a bearer token: send Authorization: Bearer <token>"
			}
			writeError(w, &Error{Type: ErrUnauthorized, Msg: msg})
			return
		}
		sum := sha256.Sum256([]byte(given))
		found := -1
		for i, t := range tokens {
			if subtle.ConstantTimeCompare(sum[:], t.SHA256[:]) == 1 && found < 0 {
				found = i
			}
		}
		if found < 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ponens", error="invalid_token"`)
			writeError(w, &Error{Type: ErrUnauthorized, Msg: "the token is not one of query.tokens"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, tokens[found])))
	})
}

// requireAdmin is the forbidden error of a request let in with a token
// whose scope is not admin, or nil: without tokens configured the service
// listens on loopback only and every route is open.
func (s *Server) requireAdmin(r *http.Request) error {
	if len(s.opts.Tokens) == 0 {
		return nil
	}
	t, _ := r.Context().Value(tokenKey{}).(Token)
	if t.Scope == ScopeAdmin {
		return nil
	}
	return &Error{Type: ErrForbidden, Msg: "token " + safe(t.Name) + " has scope " + safe(t.Scope) + ": " + r.Pattern + " needs a token of scope admin"}
}

// bearer is the token of an Authorization header of the Bearer scheme,
// whose name is case-insensitive (RFC 7235).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}
