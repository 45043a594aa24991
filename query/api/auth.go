package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// Token is one accepted bearer token, by the SHA-256 of its text: the
// token itself is never held.
type Token struct {
	Name   string
	SHA256 [32]byte
}

// ParseToken is the Token of a configured name, hex SHA-256 and scope.
// Both scopes read every route there is: the service has no admin route
// yet.
func ParseToken(name, sha256Hex, scope string) (Token, bool) {
	b, err := hex.DecodeString(sha256Hex)
	if err != nil || len(b) != sha256.Size || (scope != "read" && scope != "admin") {
		return Token{}, false
	}
	t := Token{Name: name}
	copy(t.SHA256[:], b)
	return t, true
}

// authorize wraps next so that, when tokens are configured, every request
// under /v1/ carries `Authorization: Bearer <token>` whose SHA-256 is one
// of them. The health checks and the dashboard's pages stay open: the
// pages ask for a token before they read the API.
func authorize(tokens []Token, next http.Handler) http.Handler {
	if len(tokens) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || given == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ponens"`)
			writeError(w, &Error{Type: ErrUnauthorized, Msg: "this service requires a token: send Authorization: Bearer <token>"})
			return
		}
		sum := sha256.Sum256([]byte(given))
		found := false
		for _, t := range tokens {
			found = subtle.ConstantTimeCompare(sum[:], t.SHA256[:]) == 1 || found
		}
		if !found {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ponens", error="invalid_token"`)
			writeError(w, &Error{Type: ErrUnauthorized, Msg: "the token is not one of query.tokens"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
