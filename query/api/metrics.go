package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the service's request counts and latencies, by route: the
// pattern of the mux that answered ("GET /v1/runs/{run}"), "other" for a
// path no route matches.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	handler  http.Handler // GET /metrics
}

// newMetrics registers the service's metrics with reg and serves every
// metric of reg; a nil reg is a new registry with the Go runtime's and
// the process's collectors.
func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_query_requests_total",
			Help: "Requests the query service answered, by route and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ponens_query_request_duration_seconds",
			Help:    "Time the query service took to answer a request, by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return m, nil
}

// codeWriter remembers the status code written.
type codeWriter struct {
	http.ResponseWriter
	code int
}

func (w *codeWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets a streaming answer through.
func (w *codeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// instrument counts and times each request next answers by the route of
// mux that matches it.
func (m *metrics) instrument(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, route := mux.Handler(r)
		if route == "" || route == "/v1/" {
			route = "other"
		}
		cw := &codeWriter{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(cw, r)
		if cw.code == 0 {
			cw.code = http.StatusOK
		}
		m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(route, strconv.Itoa(cw.code)).Inc()
	})
}
