package sink

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
//	ponens_store_lag_messages{stream}     messages the consumer had yet to read (after a commit; after a failed one, all it has yet to store)
//
// and by table:
//
//	ponens_store_table_rows_total{table}  rows inserted into the table (events, verdicts, dead_letters, rule_versions, record_entries)
type Metrics struct {
	rows, batches, skipped, retries *prometheus.CounterVec
	tableRows                       *prometheus.CounterVec
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
		tableRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ponens_store_table_rows_total", Help: "Rows the sink inserted into each table of the store."}, []string{"table"}),
		lag:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ponens_store_lag_messages", Help: "Messages of the stream the sink's consumer had yet to read at its last batch."}, l),
	}
	reg.MustRegister(m.rows, m.batches, m.skipped, m.retries, m.tableRows, m.batchRows, m.commit, m.lag)
	for _, t := range []string{"events", "verdicts", "dead_letters", "rule_versions", "record_entries"} {
		m.tableRows.WithLabelValues(t)
	}
	for _, k := range []Kind{Verdicts, Events, DeadLetters, RuleVersions} { // present at 0 before the first batch
		for _, c := range []*prometheus.CounterVec{m.rows, m.batches, m.skipped, m.retries} {
			c.WithLabelValues(string(k))
		}
	}
	return m
}

// Rows is the number of rows committed from the stream of kind k so far.
func (m *Metrics) Rows(k Kind) uint64 {
	var d dto.Metric
	if err := m.rows.WithLabelValues(string(k)).Write(&d); err != nil {
		return 0
	}
	return uint64(d.GetCounter().GetValue())
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

// failed records a failed commit, and lag, the messages the consumer has
// yet to store: while the store is down the backlog grows, and the gauge
// with it.
func (m *Metrics) failed(k Kind, lag uint64) {
	if m != nil {
		m.retries.WithLabelValues(string(k)).Inc()
		m.lag.WithLabelValues(string(k)).Set(float64(lag))
	}
}

// Inserted records rows inserted into table.
func (m *Metrics) Inserted(table string, rows int) {
	if m != nil && rows > 0 {
		m.tableRows.WithLabelValues(table).Add(float64(rows))
	}
}

// CountingInserter is ins counting the rows of each insert that succeeds
// into m, by table (ponens_store_table_rows_total): for what is inserted
// besides the Appenders' commits, such as the record entries.
func CountingInserter(ins Inserter, m *Metrics) Inserter {
	if m == nil {
		return ins
	}
	return countingInserter{ins, m}
}

type countingInserter struct {
	Inserter
	m *Metrics
}

func (c countingInserter) InsertArrow(table string, rec arrow.RecordBatch, token string) error {
	err := c.Inserter.InsertArrow(table, rec, token)
	if err == nil {
		c.m.Inserted(table, int(rec.NumRows()))
	}
	return err
}

// skip records a message that did not decode.
func (m *Metrics) skip(k Kind) {
	if m != nil {
		m.skipped.WithLabelValues(string(k)).Inc()
	}
}
