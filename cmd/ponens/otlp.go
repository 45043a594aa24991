package main

import (
	"crypto/subtle"
	"log/slog"
	"net/http"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/ingest/otlp"
)

// withOTLP serves the OTLP/HTTP receiver (POST /v1/traces) beside the
// gateway's handler, with the gateway's bearer token. A mapping file that
// does not load leaves the receiver out, with a log line.
func withOTLP(gw http.Handler, cfg config.Config, sink otlp.Sink, log *slog.Logger) http.Handler {
	table := mapping.Default()
	if cfg.Mapping.File != "" {
		t, err := loadMapping(cfg.Mapping)
		if err != nil {
			log.Error("otlp receiver off: the mapping does not load", "error", err)
			return gw
		}
		table = t
	}
	conv := otlp.NewConverter(table, otlp.Options{ModelCalls: cfg.OTLP.ModelCalls})
	recv := otlp.Handler(conv, sink, otlp.HandlerOptions{MaxBodyBytes: cfg.OTLP.MaxBodyBytes, Logger: log})
	mux := http.NewServeMux()
	mux.Handle("/", gw)
	mux.Handle("/v1/traces", bearer(cfg.Gateway.Token, recv))
	return mux
}

// bearer requires "Authorization: Bearer token" when token is set.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "a bearer token is required (gateway.token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
