package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths and the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ponens test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	return certFile, keyFile, cert
}

// With query.tls set, the service serves HTTPS on its listener: a client
// trusting the certificate reads /healthz and the API over it, a plain
// HTTP request to it gets no answer of the service, and a certificate
// file that does not exist is reported by Listen, naming query.tls.
func TestTLS(t *testing.T) {
	certFile, keyFile, cert := selfSigned(t, t.TempDir())
	s, err := New(Options{Listen: "127.0.0.1:0", Store: chdbQ(), TLSCertFile: certFile, TLSKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, path := range []string{"/healthz", "/v1/runs"} {
		resp, err := client.Get("https://" + addr.String() + path)
		if err != nil {
			t.Fatalf("HTTPS %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.TLS == nil {
			t.Errorf("HTTPS %s: %d %s (TLS %v)", path, resp.StatusCode, body, resp.TLS != nil)
		}
	}
	if _, err := http.DefaultClient.Get("https://" + addr.String() + "/healthz"); err == nil {
		t.Error("a client that does not trust the certificate read the service")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr.String() + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || string(body) == "ok\n" {
			t.Errorf("plain HTTP to the HTTPS service: %d %q", resp.StatusCode, body)
		}
	}
	bad, err := New(Options{Listen: "127.0.0.1:0", Store: chdbQ(), TLSCertFile: filepath.Join(t.TempDir(), "none.pem"), TLSKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Listen(); err == nil || !strings.Contains(err.Error(), "query.tls (cert_file") || !strings.Contains(err.Error(), "none.pem") {
		t.Errorf("a missing certificate: %v, want an error naming query.tls and the file", err)
	}
}

// corsCall makes a request with Origin origin (and, for OPTIONS, a
// preflight's Access-Control-Request-* headers) and returns the answer.
func corsCall(t *testing.T, url, method, origin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Origin", origin)
	if method == http.MethodOptions {
		req.Header.Set("Access-Control-Request-Method", "PUT")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// accessHeaders are the Access-Control-* headers of h.
func accessHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = strings.Join(v, ",")
		}
	}
	return out
}

// Without query.cors_origins no answer has an Access-Control-* header.
// With them, a request from an allowed origin gets
// Access-Control-Allow-Origin and its preflight is answered (204, the
// methods and headers, before any token is asked for); a request or
// preflight from another origin gets no Access-Control-* header.
func TestCORS(t *testing.T) {
	serve := func(origins []string) string {
		s, err := New(Options{Store: chdbQ(), CORSOrigins: origins, Tokens: []Token{tokenOf(t, "readers", readToken, ScopeRead)}})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		return ts.URL
	}
	const allowed = "https://dash.example.com"
	plain := serve(nil)
	for _, m := range []string{http.MethodGet, http.MethodOptions} {
		if h := accessHeaders(corsCall(t, plain+"/v1/runs", m, allowed).Header); len(h) != 0 {
			t.Errorf("no cors_origins: %s from %s answered with %v", m, allowed, h)
		}
	}
	u := serve([]string{allowed, "http://other.example:8080"})
	resp := corsCall(t, u+"/v1/runs", http.MethodGet, allowed)
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != allowed || resp.StatusCode != 401 {
		t.Errorf("GET from %s: %d, Access-Control-Allow-Origin %q, want 401 (no token) with the origin allowed", allowed, resp.StatusCode, got)
	}
	pre := corsCall(t, u+"/v1/subscriptions/ops", http.MethodOptions, allowed)
	h := accessHeaders(pre.Header)
	if pre.StatusCode != 204 || h["Access-Control-Allow-Origin"] != allowed || !strings.Contains(h["Access-Control-Allow-Methods"], "PUT") ||
		!strings.Contains(h["Access-Control-Allow-Headers"], "Authorization") {
		t.Errorf("preflight from %s: %d %v", allowed, pre.StatusCode, h)
	}
	for _, m := range []string{http.MethodGet, http.MethodOptions} {
		if h := accessHeaders(corsCall(t, u+"/v1/runs", m, "https://evil.example").Header); len(h) != 0 {
			t.Errorf("%s from a disallowed origin answered with %v", m, h)
		}
	}
	anyOrigin := serve([]string{"*"})
	if got := corsCall(t, anyOrigin+"/v1/runs", http.MethodGet, "https://anyone.example").Header.Get("Access-Control-Allow-Origin"); got != "https://anyone.example" {
		t.Errorf("cors_origins *: Access-Control-Allow-Origin %q", got)
	}
}
