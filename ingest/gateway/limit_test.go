package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/ingest/gateway"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// serveLimited runs the gateway under NewServer with opts on a loopback
// port and returns its address.
func serveLimited(t *testing.T, opts gateway.ServerOptions) string {
	t.Helper()
	_, _, js := jstest.Start(t)
	if err := transport.Provision(context.Background(), js, streams); err != nil {
		t.Fatal(err)
	}
	pub := transport.NewPublisher(js, streams.Subjects(), transport.PublisherOptions{})
	t.Cleanup(func() { pub.Close() })
	srv := gateway.NewServer(opts, gateway.New(gateway.Options{MaxBodyBytes: opts.MaxBodyBytes}, pub, transport.NewDeadLetters(js, streams.Subjects())))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// slowPost opens a connection and sends the headers of a POST announcing
// length body bytes, and only the first few of them.
func slowPost(t *testing.T, addr string, length int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"v\":", length)
	return c
}

// TestSlowBodyCutOff: a client that sends its body slowly loses the
// connection at the read timeout instead of holding it.
func TestSlowBodyCutOff(t *testing.T) {
	addr := serveLimited(t, gateway.ServerOptions{ReadTimeout: 300 * time.Millisecond})
	c := slowPost(t, addr, 500)
	// The server must end the exchange on its own; the deadline only keeps
	// a failing test from hanging.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := bufio.NewReader(c).ReadString('\n')
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server held a slow-body connection open")
	}
}

// TestBusy: over gateway.max_concurrent requests, or over the in-flight
// body budget, a request gets 503 with Retry-After at once.
func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts gateway.ServerOptions
		want string
	}{
		{"concurrent", gateway.ServerOptions{MaxConcurrent: 1}, "gateway.max_concurrent"},
		{"bytes", gateway.ServerOptions{MaxInFlightBytes: 1500, MaxBodyBytes: 1024}, "gateway.max_inflight_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveLimited(t, tc.opts)
			deadline := time.Now().Add(20 * time.Second)
			for {
				// Admitted, it then waits for its body. A new one each
				// round: one that arrived while a request of the loop was
				// in flight may have been refused itself.
				slowPost(t, addr, 1000)
				resp, err := http.Post("http://"+addr+"/v1/events", "application/json", strings.NewReader(strings.Repeat(" ", 900)+`{}`))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), tc.want) {
						t.Errorf("503 %s, Retry-After %q; want it to name %s", body, resp.Header.Get("Retry-After"), tc.want)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("never refused: last status %d", resp.StatusCode)
				}
				time.Sleep(20 * time.Millisecond)
			}
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("healthz while busy: %d", resp.StatusCode)
			}
		})
	}
}

// TestDeadLetterRate: a client filling the dead letters faster than
// gateway.deadletter_rate gets 429 listing what was refused, and its
// refused inputs stop being stored.
func TestDeadLetterRate(t *testing.T) {
	f := setup(t, gateway.Options{MaxBodyBytes: 1024, DeadLetterRate: 1})
	sent, stored := 0, 0
	for i := range 100 {
		bad := ev(fmt.Sprintf("rate-%d", i), 1, "nope", "")
		status, res, _ := f.post(t, "application/json", strings.NewReader(bad))
		sent++
		if status == http.StatusTooManyRequests {
			if res.Rejected != 1 || len(res.Errors) != 1 || res.Errors[0].Reason != "unknown-type" || !strings.Contains(res.Error, "gateway.deadletter_rate") {
				t.Errorf("429 %s", js(res))
			}
			break
		}
		if status != http.StatusUnprocessableEntity {
			t.Fatalf("post %d: %d %s", i, status, js(res))
		}
		stored++
	}
	if sent == 100 {
		t.Fatal("never limited")
	}
	if n := len(f.deadLetters(t)); n != stored {
		t.Errorf("%d dead letters stored, want the %d answered 422", n, stored)
	}
}
