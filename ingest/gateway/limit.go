package gateway

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/sync/semaphore"
)

// ServerOptions bounds what the gateway's HTTP server gives one client and
// all of them together. Zero values take the defaults.
type ServerOptions struct {
	// ReadTimeout bounds reading a request, headers and body
	// (DefaultReadTimeout): a client sending its body slowly is cut off.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers
	// to the end of the answer (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request for this
	// long (DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxConcurrent is the most requests handled at once; more get 503
	// with Retry-After (DefaultMaxConcurrent).
	MaxConcurrent int
	// MaxInFlightBytes is the most request body bytes held at once, each
	// request counted at its Content-Length, or at the body limit when it
	// sends none; a request that does not fit gets 503 with Retry-After
	// (DefaultMaxInFlightBytes).
	MaxInFlightBytes int64
	// MaxBodyBytes is the body limit (Options.MaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives the server's own errors; nil discards them.
	Logger *slog.Logger
}

// Defaults of ServerOptions.
const (
	DefaultReadTimeout      = 30 * time.Second
	DefaultWriteTimeout     = 60 * time.Second
	DefaultIdleTimeout      = 2 * time.Minute
	DefaultMaxConcurrent    = 64
	DefaultMaxInFlightBytes = 64 << 20
)

func (o ServerOptions) withDefaults() ServerOptions {
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// NewServer returns the HTTP server of handler h (New's) with the read,
// write and idle timeouts of opts, admitting at most MaxConcurrent
// requests and MaxInFlightBytes of bodies at once. /healthz is always
// admitted.
func NewServer(opts ServerOptions, h http.Handler) *http.Server {
	opts = opts.withDefaults()
	return &http.Server{
		Handler:           admit(opts, h),
		ReadHeaderTimeout: min(10*time.Second, opts.ReadTimeout),
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
}

// admit refuses requests over the concurrency or body budget with 503.
func admit(opts ServerOptions, h http.Handler) http.Handler {
	requests := semaphore.NewWeighted(int64(opts.MaxConcurrent))
	bytes := semaphore.NewWeighted(opts.MaxInFlightBytes)
	busy := func(w http.ResponseWriter, what string) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusServiceUnavailable, Response{Errors: []Problem{}, Error: "busy: " + what + "; send the request again later"})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			h.ServeHTTP(w, r)
			return
		}
		if !requests.TryAcquire(1) {
			busy(w, strconv.Itoa(opts.MaxConcurrent)+" requests in progress (gateway.max_concurrent)")
			return
		}
		defer requests.Release(1)
		size := opts.MaxBodyBytes
		if r.ContentLength >= 0 {
			size = min(r.ContentLength, opts.MaxBodyBytes)
		}
		size = max(size, 1)
		if !bytes.TryAcquire(size) {
			busy(w, "request bodies in progress take the in-flight budget of "+strconv.FormatInt(opts.MaxInFlightBytes, 10)+" bytes (gateway.max_inflight_bytes)")
			return
		}
		defer bytes.Release(size)
		h.ServeHTTP(w, r)
	})
}
