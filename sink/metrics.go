package sink

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a sink's Prometheus metrics, by kind of stream (verdicts,
// events):
//
//	ponens_store_rows_total{stream}       rows committed
//	ponens_store_batches_total{stream}    batches committed
//	ponens_store_skipped_total{stream}    messages that did not decode
//	ponens_store_retries_total{stream}    commits that failed (the batch comes again)
//	ponens_store_batch_rows{stream}       rows per committed batch (histogram)
//	ponens_store_commit_seconds{stream}   time to build and commit a batch (histogram)
//	ponens_store_lag_messages{stream}     messages the consumer had yet to read
type Metrics struct {
	rows, batches, skipped, retries *prometheus.CounterVec
	batchRows, commit               *prometheus.HistogramVec
	lag                             *prometheus.GaugeVec
}

// NewMetrics returns a sink's metrics, registered with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	l := []string{"stream"}
	m := &Metrics{
		rows:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_store_rows_total", Help: "Rows the sink committed to the store."}, l),
		batches:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_store_batches_total", Help: "Batches the sink committed to the store."}, l),
		skipped:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_store_skipped_total", Help: "Messages that did not decode, logged and acknowledged without a row."}, l),
		retries:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_store_retries_total", Help: "Commits that failed; their batch is delivered again."}, l),
		batchRows: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ponens_store_batch_rows", Help: "Rows per committed batch.", Buckets: prometheus.ExponentialBuckets(1, 4, 9)}, l),
		commit:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ponens_store_commit_seconds", Help: "Time to build and commit a batch.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}, l),
		lag:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ponens_store_lag_messages", Help: "Messages of the stream the sink's consumer had yet to read at its last batch."}, l),
	}
	reg.MustRegister(m.rows, m.batches, m.skipped, m.retries, m.batchRows, m.commit, m.lag)
	for _, k := range []Kind{Verdicts, Events, DeadLetters, RuleVersions} { // present at 0 before the first batch
		for _, c := range []*prometheus.CounterVec{m.rows, m.batches, m.skipped, m.retries} {
			c.WithLabelValues(string(k))
		}
	}
	return m
}

// committed records a committed batch.
func (m *Metrics) committed(k Kind, rows int, took time.Duration, lag uint64) {
	if m == nil {
		return
	}
	m.rows.WithLabelValues(string(k)).Add(float64(rows))
	m.batches.WithLabelValues(string(k)).Inc()
	m.batchRows.WithLabelValues(string(k)).Observe(float64(rows))
	m.commit.WithLabelValues(string(k)).Observe(took.Seconds())
	m.lag.WithLabelValues(string(k)).Set(float64(lag))
}

// failed records a failed commit.
func (m *Metrics) failed(k Kind) {
	if m != nil {
		m.retries.WithLabelValues(string(k)).Inc()
	}
}

// skip records a message that did not decode.
func (m *Metrics) skip(k Kind) {
	if m != nil {
		m.skipped.WithLabelValues(string(k)).Inc()
	}
}
