package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/transport/jstest"
)

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key into dir and returns the pool that trusts it and the two paths.
func writeSelfSigned(t *testing.T, dir string) (*x509.CertPool, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "ponens query test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool, certFile, keyFile
}

// TestQueryAdminCommand: `ponens query --alerts` with query.tls and
// query.cors_origins in its configuration serves HTTPS (plain HTTP gets
// no answer of the service), answers an allowed origin with its CORS
// header, lists the subscription `ponens alerts subscribe` stored, and
// stores a silence with an admin token that `ponens alerts list` then
// prints.
func TestQueryAdminCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens query")
	}
	work := t.TempDir()
	srv, _, _ := jstest.Start(t)
	url := srv.ClientURL()
	if _, errOut, code := runCLI(t, "alerts", "subscribe", "ops", "--url", url, "--webhook", "https://hooks.example.com/ops", "--secret", "k3y-k3y", "--rate-limit", "5"); code != 0 {
		t.Fatalf("alerts subscribe: exit %d %s", code, errOut)
	}
	pool, certFile, keyFile := writeSelfSigned(t, work)
	sum := sha256.Sum256([]byte("adm1n"))
	cfgFile := filepath.Join(work, "ponens.yaml")
	cfg := fmt.Sprintf("query:\n  tls:\n    cert_file: %s\n    key_file: %s\n  cors_origins: [\"https://dash.example.com\"]\n  tokens:\n    - name: ops\n      sha256: %q\n      scope: admin\n",
		certFile, keyFile, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	makeStore(t, filepath.Join(work, "store"))
	log := startPart(t, "query", "--config", cfgFile, "--rules", "../../examples/rules", "--store", filepath.Join(work, "store"), "--listen", addr, "--alerts", "--url", url)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	call := func(method, path, body string) (*http.Response, string) {
		req, _ := http.NewRequest(method, "https://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer adm1n")
		req.Header.Set("Origin", "https://dash.example.com")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, _ := call("GET", "/readyz", ""); resp != nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ponens query not ready over HTTPS after 60 s:\n%s", log.String())
		}
	}
	if !strings.Contains(log.String(), "query     https://"+addr+"/v1/") {
		t.Errorf("ponens query does not announce its HTTPS address:\n%s", log.String())
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/healthz"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the HTTPS service: %d %q", resp.StatusCode, b)
		}
	}
	resp, body := call("GET", "/v1/subscriptions", "")
	if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, `"id":"ops"`) || !strings.Contains(body, `"rateLimit":5`) || strings.Contains(body, "k3y") {
		t.Fatalf("GET /v1/subscriptions: %v %s", resp, body)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://dash.example.com" {
		t.Errorf("Access-Control-Allow-Origin %q for an allowed origin", got)
	}
	if resp, body := call("PUT", "/v1/silences/deploy", `{"rule":"tests_*","for":"2h"}`); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("PUT /v1/silences/deploy: %v %s", resp, body)
	}
	if out, errOut, code := runCLI(t, "alerts", "list", "--url", url); code != 0 || !strings.Contains(out, `silence {"id":"deploy","rule":"tests_*"`) {
		t.Errorf("alerts list after the PUT: exit %d\n%s%s", code, out, errOut)
	}
}
