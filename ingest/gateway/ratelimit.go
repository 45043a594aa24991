package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ErrDeadLetterRate is why a refused input of a client over its dead-letter
// rate (Options.DeadLetterRate) is not stored: the answer is 429 and lists
// the refused events all the same.
var ErrDeadLetterRate = errors.New("this client's refused inputs exceed the dead-letter rate (gateway.deadletter_rate)")

// maxClients bounds the clients whose dead-letter rates are tracked; past
// it the table starts afresh.
const maxClients = 10_000

// clientLimits keeps a token bucket of dead-letter bytes per client host.
type clientLimits struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex // guards clients
	clients map[string]*rate.Limiter
}

// newClientLimits returns the buckets of bytesPerSec each, holding burst
// bytes; nil (no limit) when bytesPerSec is 0.
func newClientLimits(bytesPerSec float64, burst int) *clientLimits {
	if bytesPerSec <= 0 {
		return nil
	}
	return &clientLimits{rate: rate.Limit(bytesPerSec), burst: burst, clients: map[string]*rate.Limiter{}}
}

// deadLetters returns the dead-letter sink of r: sink under the rate of
// r's client.
func (c *clientLimits) deadLetters(r *http.Request, sink DeadLetterSink) DeadLetterSink {
	if c == nil {
		return sink
	}
	return limitedDeadLetters{sink: sink, limit: c.limiter(r)}
}

// limiter returns the bucket of r's client.
func (c *clientLimits) limiter(r *http.Request) *rate.Limiter {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.clients[host]
	if l == nil {
		if len(c.clients) >= maxClients {
			clear(c.clients)
		}
		l = rate.NewLimiter(c.rate, c.burst)
		c.clients[host] = l
	}
	return l
}

// limitedDeadLetters is a request's DeadLetterSink under its client's rate.
type limitedDeadLetters struct {
	sink  DeadLetterSink
	limit *rate.Limiter
}

// Send stores the dead letter when the client's bucket holds its bytes,
// and returns ErrDeadLetterRate otherwise.
func (l limitedDeadLetters) Send(ctx context.Context, reason, source string, err error, payload []byte) error {
	if !l.limit.AllowN(time.Now(), max(len(payload), 1)) {
		return ErrDeadLetterRate
	}
	return l.sink.Send(ctx, reason, source, err, payload)
}
