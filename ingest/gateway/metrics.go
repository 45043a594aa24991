package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ponens/ponens/transport"
)

// Metrics are the gateway's Prometheus metrics, served at GET /metrics:
//
//	ponens_gateway_events_total{status}   events by what became of them
//	                                      (stored, duplicate, rejected,
//	                                      conflict, failed)
//	ponens_stream_messages{stream}        messages in EVENTS, VERDICTS,
//	ponens_stream_bytes{stream}           DEADLETTER, and their bytes
//	ponens_stream_used_ratio{stream}      how full against its bound (0: none)
//	ponens_stream_limit_alarm{stream}     1 at or over nats.limit_alarm
//
// and the Go runtime's and the process's own.
type Metrics struct {
	reg                      *prometheus.Registry
	events                   *prometheus.CounterVec
	msgs, bytes, used, alarm *prometheus.GaugeVec
}

// NewMetrics returns the gateway's metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_gateway_events_total",
			Help: "Events received by the gateway, by what became of them (stored, duplicate, rejected, conflict, failed)."}, []string{"status"}),
		msgs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ponens_stream_messages",
			Help: "Messages in the stream."}, []string{"stream"}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ponens_stream_bytes",
			Help: "Bytes in the stream."}, []string{"stream"}),
		used: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ponens_stream_used_ratio",
			Help: "How full the stream is against its bound in messages or bytes, whichever is nearer (0 without a bound)."}, []string{"stream"}),
		alarm: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ponens_stream_limit_alarm",
			Help: "1 when the stream is at or over nats.limit_alarm of its bound: EVENTS and VERDICTS then soon refuse new messages, DEADLETTER drops its oldest."}, []string{"stream"}),
	}
	m.reg.MustRegister(m.events, m.msgs, m.bytes, m.used, m.alarm,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range []string{"stored", "duplicate", "rejected", "conflict", "failed"} {
		m.events.WithLabelValues(s) // present at 0 before the first event
	}
	return m
}

// Registerer is where other parts of the same process (the sink inside
// `ponens serve`) register their metrics, served at the same /metrics.
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// Registry is the registry itself, for a part of the same process that
// serves the metrics too (the query service's /metrics inside `ponens serve`).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveStreams sets the stream gauges from a reading of transport.Usage;
// transport.WatchLimits calls it at each reading.
func (m *Metrics) ObserveStreams(us []transport.StreamUsage) {
	for _, u := range us {
		m.msgs.WithLabelValues(u.Stream).Set(float64(u.Msgs))
		m.bytes.WithLabelValues(u.Stream).Set(float64(u.Bytes))
		m.used.WithLabelValues(u.Stream).Set(u.Used)
		a := 0.0
		if u.Alarm {
			a = 1
		}
		m.alarm.WithLabelValues(u.Stream).Set(a)
	}
}

// countEvents adds the statuses of one request's events.
func (m *Metrics) countEvents(events []EventResult) {
	if m == nil {
		return
	}
	for _, e := range events {
		m.events.WithLabelValues(e.Status).Inc()
	}
}

// handler serves the metrics in the Prometheus text format.
func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
