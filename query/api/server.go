package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// Options configure a Server.
type Options struct {
	// Listen is the host:port Run listens on.
	Listen string
	// Store is what the service reads.
	Store Querier
	// Rules is the configured rule manifest (what `ponens check` lists in
	// summary.json), in order.
	Rules []schema.RuleManifestEntry
	// Monitor, when set, is the rule set the service evaluates a stored
	// run's events with for a summary's matrix.results (each rule's result
	// by finite-trace semantics), as `ponens check` does; without it, or
	// when a summary lists a rule it does not hold, matrix.results is
	// absent. The set's rules are Rules.
	Monitor *ruleset.Set
	// UI, when set, answers every path outside the API.
	UI http.Handler
	// Live, when set, is what /v1/stream follows; without it the route is
	// not registered (its 404 says why) nor described in /openapi.json.
	Live Live
	// Registry, when set, is where the service registers its request
	// metrics, and what /metrics serves (every metric of the process that
	// registered there); when nil, /metrics serves the service's own
	// registry.
	Registry *prometheus.Registry
	// Tokens, when any, are required of every request under /v1/.
	Tokens []Token
	// Alerts, when set, are the alert subscriptions and silences the
	// admin routes (/v1/subscriptions, /v1/silences) manage; without it
	// they are not registered nor described in /openapi.json.
	Alerts Alerts
	// TLSCertFile and TLSKeyFile, when set, are the PEM certificate and
	// key Run serves HTTPS with.
	TLSCertFile, TLSKeyFile string
	// CORSOrigins are the origins a browser on another site may read the
	// API from ("*": any); none sends no CORS header.
	CORSOrigins []string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Server is the query service.
type Server struct {
	opts    Options
	store   Querier
	mux     *http.ServeMux
	ln      net.Listener
	engines *enginePool // nil without opts.Monitor
	metrics *metrics
	// registered are the routes of mux in the order registered, each
	// with the query parameters it takes: what /openapi.json describes.
	registered []route
	// doc is the OpenAPI document of the routes registered.
	doc []byte
	// closing is closed when Run shuts the server down.
	closing chan struct{}
}

// route is a registered pattern and its query parameters.
type route struct {
	pattern string // "GET /v1/runs/{run}"
	params  []string
}

// New makes a server of opts.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("query api: no store")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, store: opts.Store, mux: http.NewServeMux(), closing: make(chan struct{})}
	if opts.Monitor != nil {
		var err error
		if s.engines, err = newEnginePool(opts.Monitor); err != nil {
			return nil, err
		}
	}
	var err error
	if s.metrics, err = newMetrics(opts.Registry); err != nil {
		return nil, fmt.Errorf("query api: registering its metrics: %w", err)
	}
	s.routes()
	s.doc = s.document()
	return s, nil
}

// Handler is the service's HTTP handler.
func (s *Server) Handler() http.Handler {
	return cors(s.opts.CORSOrigins, s.metrics.instrument(s.mux, authorize(s.opts.Tokens, s.mux)))
}

// get registers a GET route taking the query parameters params.
func (s *Server) get(pattern string, params []string, h http.HandlerFunc) {
	s.route(http.MethodGet, pattern, params, h)
}

// route registers a route of method taking the query parameters params.
func (s *Server) route(method, pattern string, params []string, h http.HandlerFunc) {
	s.registered = append(s.registered, route{pattern: method + " " + pattern, params: params})
	s.mux.HandleFunc(method+" "+pattern, h)
}

// Listen binds opts.Listen now, so that an address in use is reported
// before the service starts; Run serves on it (HTTPS with
// opts.TLSCertFile, whose files are read now). It returns the bound
// address (the port chosen when opts.Listen's is 0).
func (s *Server) Listen() (net.Addr, error) {
	if s.ln == nil {
		ln, err := listen(s.opts)
		if err != nil {
			return nil, err
		}
		s.ln = ln
	}
	return s.ln.Addr(), nil
}

// Run serves on opts.Listen (bound by Listen, or now) until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	if _, err := s.Listen(); err != nil {
		return err
	}
	ln := s.ln
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	// Open streams (/v1/stream) end at the shutdown instead of holding it
	// up; other requests are answered first.
	srv.RegisterOnShutdown(func() { close(s.closing) })
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handle registers a GET route whose answer is enveloped JSON.
func (s *Server) handle(pattern string, known []string, fn func(r *http.Request, q *query) (any, error)) {
	s.get(pattern, known, func(w http.ResponseWriter, r *http.Request) {
		q, err := newQuery(r.URL.Query(), s.opts.Now(), known...)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := pathValues(r, "run", "rule"); err != nil {
			writeError(w, err)
			return
		}
		data, err := fn(r, q)
		if err != nil {
			writeError(w, err)
			return
		}
		writeData(w, data)
	})
}

func (s *Server) routes() {
	s.get("/healthz", nil, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	s.get("/metrics", nil, s.metrics.handler.ServeHTTP)
	s.get("/openapi.json", nil, s.serveOpenAPI)
	s.get("/readyz", nil, func(w http.ResponseWriter, r *http.Request) {
		if err := ping(r.Context(), s.store); err != nil {
			writeError(w, &Error{Type: ErrUnavailable, Msg: "store: " + err.Error()})
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	s.handle("/v1/runs", append(selectionParams, "limit", "cursor"), func(r *http.Request, q *query) (any, error) {
		sel, err := q.selection()
		if err != nil {
			return nil, err
		}
		limit, err := q.intParam("limit", 100, 1, 10000)
		if err != nil {
			return nil, err
		}
		return s.Runs(r.Context(), RunsOptions{Selection: sel, Limit: limit, Cursor: q.str("cursor")})
	})
	s.handle("/v1/runs/{run}", nil, func(r *http.Request, q *query) (any, error) {
		return s.RunDetail(r.Context(), r.PathValue("run"))
	})
	s.handle("/v1/runs/{run}/timeline", nil, func(r *http.Request, q *query) (any, error) {
		return s.Timeline(r.Context(), r.PathValue("run"))
	})
	s.recordRoutes()
	s.handle("/v1/rules", []string{"since", "until"}, func(r *http.Request, q *query) (any, error) {
		sel, err := q.selection()
		if err != nil {
			return nil, err
		}
		rules, err := s.Rules(r.Context(), RulesOptions{Since: sel.Since, Until: sel.Until})
		return map[string]any{"rules": rules}, err
	})
	s.handle("/v1/rules/{rule}/stats", []string{"since", "until", "step"}, func(r *http.Request, q *query) (any, error) {
		sel, err := q.selection()
		if err != nil {
			return nil, err
		}
		step, err := q.step(time.Hour)
		if err != nil {
			return nil, err
		}
		return s.RuleStats(r.Context(), r.PathValue("rule"), StatsOptions{Since: sel.Since, Until: sel.Until, Step: step})
	})
	s.handle("/v1/fleet", []string{"since", "until", "step"}, func(r *http.Request, q *query) (any, error) {
		sel, err := q.selection()
		if err != nil {
			return nil, err
		}
		step, err := q.step(time.Hour)
		if err != nil {
			return nil, err
		}
		if step%time.Hour != 0 {
			return nil, badData("step", "expected a whole number of hours (1h, 6h, 1d): violations are counted per hour, got %s", safe(q.str("step")))
		}
		return s.Fleet(r.Context(), FleetOptions{Since: sel.Since, Until: sel.Until, Step: step})
	})
	s.handle("/v1/deadletters", []string{"since", "until", "reason", "source", "before", "limit"}, func(r *http.Request, q *query) (any, error) {
		sel, err := q.selection()
		if err != nil {
			return nil, err
		}
		limit, err := q.intParam("limit", 100, 1, 1000)
		if err != nil {
			return nil, err
		}
		before, err := q.intParam("before", 0, 1, math.MaxInt64)
		if err != nil {
			return nil, err
		}
		return s.DeadLetters(r.Context(), DeadLetterOptions{Selection: sel, Reason: q.str("reason"), Source: q.str("source"), Before: uint64(before), Limit: limit})
	})
	s.get("/v1/runs/{run}/verdicts", nil, func(w http.ResponseWriter, r *http.Request) {
		if _, err := newQuery(r.URL.Query(), s.opts.Now()); err != nil {
			writeError(w, err)
			return
		}
		if err := pathValues(r, "run"); err != nil {
			writeError(w, err)
			return
		}
		b, err := s.VerdictsJSONL(r.Context(), r.PathValue("run"))
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write(b)
	})
	s.get("/v1/summary", selectionParams, func(w http.ResponseWriter, r *http.Request) {
		q, err := newQuery(r.URL.Query(), s.opts.Now(), selectionParams...)
		if err != nil {
			writeError(w, err)
			return
		}
		sel, err := q.selection()
		if err != nil {
			writeError(w, err)
			return
		}
		b, err := s.Summary(r.Context(), SummaryOptions{Selection: sel})
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	if s.opts.Live != nil {
		s.get("/v1/stream", streamParams, s.stream)
	}
	s.get("/v1/export", append(selectionParams, "what", "format"), s.serveExport)
	if s.opts.Alerts != nil {
		s.adminRoutes()
		if feed, ok := s.opts.Live.(AlertFeed); ok {
			s.get("/v1/subscriptions/{id}/stream", nil, s.alertStream(feed))
		}
	}
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/stream" {
			writeError(w, notFound("no live stream: this service follows no NATS server (ponens serve does, and ponens query --alerts; ponens query alone reads only the store)"))
			return
		}
		if s.opts.Alerts == nil && (strings.HasPrefix(r.URL.Path, "/v1/subscriptions") || strings.HasPrefix(r.URL.Path, "/v1/silences")) {
			writeError(w, notFound("no alert subscriptions: this service has no alerts bucket (ponens serve has; ponens query with --alerts)"))
			return
		}
		writeError(w, notFound("no endpoint %s %s", r.Method, safe(r.URL.Path)))
	})
	if s.opts.UI != nil {
		s.mux.Handle("/", s.opts.UI)
	}
}

// pathValues refuses path values that no stored id can be: over the
// parameter limit, invalid UTF-8 or holding NUL.
func pathValues(r *http.Request, names ...string) error {
	for _, n := range names {
		v := r.PathValue(n)
		switch {
		case len(v) > maxParam:
			return badData(n, "at most %d bytes, got %d", maxParam, len(v))
		case !utf8.ValidString(v):
			return badData(n, "not valid UTF-8")
		case strings.IndexByte(v, 0) >= 0:
			return badData(n, "holds a NUL byte")
		}
	}
	return nil
}

// serveExport answers /v1/export: what (events or verdicts) of the runs
// selected as /v1/runs selects them, in format (arrow or parquet).
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	q, err := newQuery(r.URL.Query(), s.opts.Now(), append(selectionParams, "what", "format")...)
	if err != nil {
		writeError(w, err)
		return
	}
	o := ExportOptions{What: q.str("what"), Format: q.str("format")}
	if _, ok := exportSchemas[o.What]; !ok {
		writeError(w, badData("what", "expected events or verdicts, got %s", safe(o.What)))
		return
	}
	if o.Format == "" {
		o.Format = "arrow"
	}
	typ, ok := exportTypes[o.Format]
	if !ok {
		writeError(w, badData("format", "expected arrow or parquet, got %s", safe(o.Format)))
		return
	}
	if o.Selection, err = q.selection(); err != nil {
		writeError(w, err)
		return
	}
	if err := s.rulesKnown(r.Context(), o.Rules); err != nil {
		writeError(w, err)
		return
	}
	b, err := s.Export(r.Context(), o)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", typ[0])
	w.Header().Set("Content-Disposition", `attachment; filename="`+o.What+typ[1]+`"`)
	_, _ = w.Write(b)
}
