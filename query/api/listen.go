package api

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
)

// listen binds o.Listen; with o.TLSCertFile the listener serves TLS with
// the certificate and key read now, so that a missing or bad file is
// reported before the service starts.
func listen(o Options) (net.Listener, error) {
	var cfg *tls.Config
	if o.TLSCertFile != "" || o.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("query.tls (cert_file %s, key_file %s): %w", o.TLSCertFile, o.TLSKeyFile, err)
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil || cfg == nil {
		return ln, err
	}
	return tls.NewListener(ln, cfg), nil
}

// corsMethods and corsHeaders are what a preflight request is told a
// page on an allowed origin may send.
const (
	corsMethods = "GET, HEAD, PUT, DELETE"
	corsHeaders = "Authorization, Content-Type"
)

// cors wraps next so that a request whose Origin is one of origins ("*":
// any) is answered with Access-Control-Allow-Origin, and its preflight
// (OPTIONS with Access-Control-Request-Method) with the methods and
// headers the API takes, before any token is asked for: a browser sends
// no credentials on a preflight. Any other request goes on unchanged,
// without CORS headers, so that the browser refuses the page the answer.
func cors(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	anyOrigin := slices.Contains(origins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !anyOrigin && !slices.Contains(origins, origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "Content-Disposition, WWW-Authenticate")
		next.ServeHTTP(w, r)
	})
}
