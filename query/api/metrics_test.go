package api

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// /metrics counts requests by route pattern and status code, and times
// them; with a registry given, it serves that registry's other metrics
// too.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "ponens_other_part_total", Help: "a metric of another part"})
	reg.MustRegister(other)
	other.Add(7)
	s, err := New(Options{Store: chdbQ(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, p := range []string{"/v1/runs", "/v1/runs", "/v1/runs/r1", "/v1/runs/nope", "/v1/runs?limit=0", "/v1/nothing"} {
		get(t, ts.URL+p)
	}
	code, body := get(t, ts.URL+"/metrics")
	for _, want := range []string{
		`ponens_query_requests_total{code="200",route="GET /v1/runs"} 2`,
		`ponens_query_requests_total{code="400",route="GET /v1/runs"} 1`,
		`ponens_query_requests_total{code="200",route="GET /v1/runs/{run}"} 1`,
		`ponens_query_requests_total{code="404",route="GET /v1/runs/{run}"} 1`,
		`ponens_query_requests_total{code="404",route="other"} 1`,
		`ponens_query_request_duration_seconds_count{route="GET /v1/runs"} 3`,
		"ponens_other_part_total 7"} {
		if code != 200 || !strings.Contains(string(body), want) {
			t.Errorf("/metrics: %d, no line %q", code, want)
		}
	}
	if _, err := New(Options{Store: chdbQ(), Registry: reg}); err == nil {
		t.Error("a second service registered its metrics in the same registry")
	}
}
