package pipeline

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsServer listens on addr now and returns the actor that serves the
// metrics of g at http://addr/metrics until ctx ends. An address that
// cannot be listened on is a ConfigError of key.
func MetricsServer(key, addr string, g prometheus.Gatherer) (Actor, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return Actor{}, nil, &ConfigError{Key: key, Err: err}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return Actor{Name: "metrics", Run: func(ctx context.Context) error {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
		}
		down, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(down)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}}, ln.Addr(), nil
}
