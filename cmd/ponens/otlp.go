package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/ingest/otlp"
)

// withOTLP serves the OTLP/HTTP receiver recv (POST /v1/traces; nil:
// none) beside the gateway's handler.
func withOTLP(gw, recv http.Handler) http.Handler {
	if recv == nil {
		return gw
	}
	mux := http.NewServeMux()
	mux.Handle("/", gw)
	mux.Handle("/v1/traces", recv)
	return mux
}

// otlpReceiver is the handler of POST /v1/traces, behind the gateway's
// bearer token; nil when the mapping does not load (logged).
func otlpReceiver(cfg config.Config, sink otlp.Sink, log *slog.Logger) http.Handler {
	table := mapping.Default()
	if cfg.Mapping.File != "" {
		t, err := loadMapping(cfg.Mapping)
		if err != nil {
			log.Error("otlp receiver off: the mapping does not load", "error", err)
			return nil
		}
		table = t
	}
	conv := otlp.NewConverter(table, otlp.Options{ModelCalls: cfg.OTLP.ModelCalls})
	recv := otlp.Handler(conv, sink, otlp.HandlerOptions{MaxBodyBytes: cfg.OTLP.MaxBodyBytes, Logger: log})
	return bearer(cfg.Gateway.Token, recv)
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

// serveOTLP serves recv alone on otlp.listen, with the gateway's server
// limits, at addr; stop shuts it down (once, however
// often it is called). With otlp.listen
// empty or no receiver it serves nothing. An address that cannot be
// listened on is an error (exit 2); the server failing later is logged.
func serveOTLP(cfg config.Config, recv http.Handler, log *slog.Logger) (addr net.Addr, stop func() error, err error) {
	if cfg.OTLP.Listen == "" || recv == nil {
		return nil, func() error { return nil }, nil
	}
	ln, err := net.Listen("tcp", cfg.OTLP.Listen)
	if err != nil {
		return nil, nil, exitWith(exitBadInput, "otlp.listen: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/traces", recv)
	srv := gateway.NewServer(gatewayServerOptions(cfg, log), mux)
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("otlp receiver stopped", "listen", cfg.OTLP.Listen, "err", err)
		}
		served <- err
	}()
	return ln.Addr(), sync.OnceValue(func() error {
		down, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(down)
		<-served
		return err
	}), nil
}
