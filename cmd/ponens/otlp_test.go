package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOTLPThroughServe: GenAI spans posted to the running service's
// OTLP address (otlp.listen, POST /v1/traces) become runs its workers
// judge: the run the spans closed is known to the service as ended. The
// OTLP address serves nothing but /v1/traces.
func TestOTLPThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	work := t.TempDir()
	otlpAddr := freeAddr(t)
	url, _, _ := startServe(t, work, "PONENS_OTLP_LISTEN="+otlpAddr)
	if resp, err := http.Post("http://"+otlpAddr+"/v1/events", "application/json", strings.NewReader("{}")); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("the OTLP address serves /v1/events: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	data, err := os.ReadFile("../../examples/imports/otlp.json")
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(data)
	zw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+otlpAddr+"/v1/traces", &zipped)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"partialSuccess":{"rejectedSpans":"1"`) {
		t.Fatalf("POST /v1/traces: %d %s", resp.StatusCode, body)
	}
	commit, _ := filepath.Abs("../../examples/decide/commit.json")
	var r cliResult
	for try := 0; try < 100; try++ {
		r = runBinary(t, work, nil, "decide", "--run", "conv_5j66UpCpwteGg4YSxUnt7lPY", "--url", url, commit)
		if strings.Contains(r.stderr, "the run has ended") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("the service does not know the run ended: exit %d %s", r.code, r.stderr)
}

// TestOTLPOnGatewayAddress: without otlp.listen, POST /v1/traces is served
// on the gateway's address.
func TestOTLPOnGatewayAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	_, gatewayAddr, _ := startServe(t, t.TempDir())
	resp, err := http.Post("http://"+gatewayAddr+"/v1/traces", "application/json", strings.NewReader(`{"resourceSpans":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST /v1/traces on the gateway: %d %s", resp.StatusCode, body)
	}
}
