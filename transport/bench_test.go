package transport_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// BenchmarkPublish publishes action events of 100 runs to an embedded
// server, MaxInFlight unacknowledged at a time, and waits for every
// acknowledgement.
func BenchmarkPublish(b *testing.B) {
	for _, inFlight := range []int{64, 512} {
		b.Run("inflight="+strconv.Itoa(inFlight), func(b *testing.B) {
			_, _, js := jstest.Start(b)
			cfg := testStreams
			cfg.Memory = true
			provision(b, js, cfg)
			p := transport.NewPublisher(js, cfg.Subjects(), transport.PublisherOptions{MaxInFlight: inFlight})
			ctx := context.Background()
			runs := make([]string, 100)
			for i := range runs {
				runs[i] = "run-" + strconv.Itoa(i)
			}
			seq := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				seq++
				for _, r := range runs {
					if err := p.Publish(ctx, event(r, seq)); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*len(runs))/b.Elapsed().Seconds(), "events/s")
		})
	}
}
