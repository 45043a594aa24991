package loadgen

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Latency summarises latency samples in milliseconds.
type Latency struct {
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Samples int     `json:"samples"`
	Max     float64 `json:"-"`
}

// Summarize returns the nearest-rank p50 and p99 (and the maximum) of
// samples, in milliseconds; all zero when there are none. It sorts samples.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 } // µs precision
	return Latency{P50: ms(Percentile(samples, 50)), P99: ms(Percentile(samples, 99)),
		Max: ms(samples[len(samples)-1]), Samples: len(samples)}
}

// Percentile is the nearest-rank p-th percentile of sorted, which must not
// be empty: the smallest sample that at least p percent of the samples do
// not exceed.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// recorder keeps the publish time of every event of a load and the latency
// samples of the verdicts and alerts that come back. It is safe for
// concurrent use.
//
// Publish times are kept per run, indexed by seq, as microseconds since the
// first publish in a uint32: four bytes an event (a 20-second load at 50,000
// events per second keeps 4 MB), for at most 71 minutes.
type recorder struct {
	mu       sync.Mutex
	t0       time.Time
	sent     [][]uint32 // [run][seq-1]: µs since t0; 0 for "not sent"
	on       bool
	verdicts []time.Duration
	alerts   []time.Duration
	webhooks []time.Duration
	trace    []Sample // every sample, in arrival order, when keepTrace
	keep     bool
	missed   int // verdicts or alerts of this load's runs whose event's publish time is unknown
}

// Sample is one latency sample: when its event was published (since the
// first publish) and how long its verdict or alert took.
type Sample struct {
	Alert     bool
	Published time.Duration
	Latency   time.Duration
}

func newRecorder(runs int, keepTrace bool) *recorder {
	return &recorder{sent: make([][]uint32, runs), on: true, keep: keepTrace}
}

// published records that seq of run i is being published now.
func (r *recorder) published(i int, seq uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.t0.IsZero() {
		r.t0 = now.Add(-time.Microsecond) // so that no recorded time is 0
	}
	s := r.sent[i]
	for uint64(len(s)) < seq {
		s = append(s, 0)
	}
	s[seq-1] = uint32(min(now.Sub(r.t0).Microseconds(), math.MaxUint32))
	r.sent[i] = s
}

// received records a verdict (alert false) or an alert about seq of run i
// that arrived at now, while recording is on.
func (r *recorder) received(i int, seq uint64, now time.Time, alert bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on {
		return
	}
	s := r.sent[i]
	if seq < 1 || seq > uint64(len(s)) || s[seq-1] == 0 {
		r.missed++
		return
	}
	at := time.Duration(s[seq-1]) * time.Microsecond
	d := now.Sub(r.t0) - at
	if r.keep {
		r.trace = append(r.trace, Sample{Alert: alert, Published: at, Latency: d})
	}
	if alert {
		r.alerts = append(r.alerts, d)
	} else {
		r.verdicts = append(r.verdicts, d)
	}
}

// receivedWebhook records a webhook delivery about seq of run i that
// arrived at now, while recording is on.
func (r *recorder) receivedWebhook(i int, seq uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sent[i]
	if !r.on || seq < 1 || seq > uint64(len(s)) || s[seq-1] == 0 {
		return
	}
	r.webhooks = append(r.webhooks, now.Sub(r.t0)-time.Duration(s[seq-1])*time.Microsecond)
}

// stop ends recording and returns the samples.
func (r *recorder) stop() (verdicts, alerts, webhooks []time.Duration, trace []Sample, missed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.verdicts, r.alerts, r.webhooks, r.trace, r.missed
}

// bytes estimates the memory the recorder holds.
func (r *recorder) bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int64(len(r.sent)) * 24
	for _, s := range r.sent {
		n += int64(cap(s)) * 4
	}
	return n + int64(cap(r.verdicts)+cap(r.alerts))*8
}
