package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listening = regexp.MustCompile(`gateway +(http://\S+)/v1/events`)

// startIngest runs `ponens ingest` with args until the test ends and
// returns the gateway's URL and a function that stops the command and
// returns its exit code.
func startIngest(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	root := newRootCommand()
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	root.SetArgs(append([]string{"ingest", "--listen", "127.0.0.1:0"}, args...))
	var code int
	done := make(chan struct{}) // closed when the command has returned, with code set
	go func() {
		defer close(done)
		code = exitOK
		if err := root.ExecuteContext(ctx); err != nil {
			var ex *exitError
			code = exitBadInput
			if errors.As(err, &ex) {
				code = ex.code
			}
			t.Logf("ponens ingest: %v", err)
		}
	}()
	stop := func() int {
		cancel()
		select {
		case <-done:
			return code
		case <-time.After(20 * time.Second):
			t.Fatal("ponens ingest did not stop")
			return -1
		}
	}
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stop
		}
		select {
		case <-done:
			t.Fatalf("ponens ingest exited %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ponens ingest is not listening: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func post(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/events", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestIngest(t *testing.T) {
	srv, _, js := jstest.Start(t)
	t.Setenv("PONENS_GATEWAY_TOKEN", "s3cret")
	url, stop := startIngest(t, "--url", srv.ClientURL(), "--max-body", "2048")
	body := `{"v":1,"runId":"run-a","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}` + "\n" +
		`{"v":1,"runId":"run-a","seq":2,"ts":"2025-01-01T00:00:00Z","type":"nope"}` + "\n"
	if code := post(t, url, "", body); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	if code := post(t, url, "s3cret", body); code != http.StatusMultiStatus {
		t.Errorf("with the token: %d", code)
	}
	if code := post(t, url, "s3cret", strings.Repeat(" ", 4096)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("over --max-body: %d", code)
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: %v, %v", resp, err)
	}
	resp.Body.Close()
	if code := stop(); code != exitOK {
		t.Errorf("exit %d after SIGINT-like stop", code)
	}
	if n := len(jstest.Messages(t, js, schema.StreamEvents)); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
	reasons := map[string]int{}
	for _, m := range jstest.Messages(t, js, schema.StreamDeadLetter) {
		reasons[m.Headers().Get(schema.HeaderReason)]++
	}
	if reasons["unknown-type"] != 1 || reasons["too-large"] != 1 || len(reasons) != 2 {
		t.Errorf("dead letters by reason %v", reasons)
	}
}

func TestIngestNoServer(t *testing.T) {
	t.Setenv("PONENS_NATS_START_WAIT", "0s")
	_, stderr, code := runPonens(t, "ingest", "--url", "nats://127.0.0.1:1", "--listen", "127.0.0.1:0")
	if code != exitUnavailable || !strings.Contains(stderr, "connect to nats://127.0.0.1:1") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	t.Setenv("PONENS_NATS_START_WAIT", "2s")
	_, stderr, code = runPonens(t, "ingest", "--url", "nats://127.0.0.1:1", "--listen", "127.0.0.1:0")
	if code != exitUnavailable || !regexp.MustCompile(`nats://127\.0\.0\.1:1 not reachable \(waited 2(\.\d)?s, nats\.start_wait 2s\)`).MatchString(stderr) {
		t.Errorf("start_wait 2s: exit %d, %q", code, stderr)
	}
	_, stderr, code = runPonens(t, "ingest", "--listen", "nowhere")
	if code != exitBadInput || !strings.Contains(stderr, `gateway.listen: must be host:port, got "nowhere"`) {
		t.Errorf("bad listen: exit %d, %q", code, stderr)
	}
}

// A gateway started before its NATS server waits for it (nats.start_wait),
// over more than one attempt (each gives up after 5 s), and serves once it
// is up.
func TestIngestWaitsForTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 6 s for a server")
	}
	addr := freeAddr(t)
	t.Setenv("PONENS_NATS_START_WAIT", "30s")
	go func() {
		time.Sleep(6500 * time.Millisecond)
		srv, err := transport.StartEmbedded(transport.EmbeddedOptions{Listen: addr, StoreDir: t.TempDir(), Name: "late"})
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(srv.Shutdown)
	}()
	url, stop := startIngest(t, "--url", "nats://"+addr)
	if code := post(t, url, "", `{"v":1,"runId":"run-a","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}`); code != http.StatusAccepted && code != http.StatusOK {
		t.Errorf("event posted once the server is up: %d", code)
	}
	if code := stop(); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

// What waiting cannot fix ends the start at once, whatever nats.start_wait
// says: a server without JetStream, and a user the server denies the
// JetStream API (the denial comes asynchronously; the request only times
// out).
func TestIngestRefusedAtOnce(t *testing.T) {
	t.Setenv("PONENS_NATS_START_WAIT", "1m")
	noJS := jstest.Plain(t, func(*server.Options) {})
	_, stderr, code := runPonens(t, "ingest", "--url", noJS, "--listen", "127.0.0.1:0")
	if code != exitUnavailable || !strings.Contains(stderr, "jetstream not enabled") || strings.Contains(stderr, "waited") {
		t.Errorf("no JetStream: exit %d, %q; want exit 3 at once, naming JetStream not enabled", code, stderr)
	}
	denied := jstest.Plain(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "agent", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{"ponens.>"}, Deny: []string{"$JS.API.>"}}}}}
	})
	url := strings.Replace(denied, "nats://", "nats://agent:pw@", 1)
	_, stderr, code = runPonens(t, "ingest", "--url", url, "--listen", "127.0.0.1:0")
	if code != exitUnavailable || !strings.Contains(stderr, "permissions violation") || strings.Contains(stderr, "JetStream did not answer") {
		t.Errorf("JetStream API denied: exit %d, %q; want exit 3 after one attempt, naming the permissions violation", code, stderr)
	}
}
