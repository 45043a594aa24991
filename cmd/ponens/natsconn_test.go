package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/transport/jstest"
)

// TestServeConfiguredUsersAndTLS: `ponens serve` with users and TLS with
// client certificates in its configuration requires them: its own parts
// connect as the configured admin over TLS, an agent publishes with its
// password and certificate, and a client without a certificate or with
// the wrong password is refused (exit 3); the agent's password used in
// another role is refused at once (exit 2), naming the role.
func TestServeConfiguredUsersAndTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ponens serve")
	}
	tls := jstest.NewTLSFiles(t)
	dir := t.TempDir()
	listen := freeAddr(t)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clientTLS := fmt.Sprintf("  tls: {ca_file: %s, cert_file: %s, key_file: %s}\n", tls.CA, tls.ClientCert, tls.ClientKey)
	serveCfg := write("serve.yaml", fmt.Sprintf(`nats:
  listen: %s
  store_dir: %s
  user: admin
  password: admin-pw
%s  server:
    users:
      admin: {password: admin-pw}
      agent: {password: agent-pw}
    tls: {cert_file: %s, key_file: %s, ca_file: %s, client_certs: true}
gateway:
  listen: 127.0.0.1:0
`, listen, filepath.Join(dir, "nats"), clientTLS, tls.ServerCert, tls.ServerKey, tls.CA))
	agentCfg := write("agent.yaml", "nats:\n  url: nats://"+listen+"\n  user: agent\n  password: agent-pw\n"+clientTLS)
	noCert := write("nocert.yaml", fmt.Sprintf("nats:\n  url: nats://%s\n  user: agent\n  password: agent-pw\n  tls: {ca_file: %s}\n", listen, tls.CA))
	wrongRole := write("role.yaml", "nats:\n  url: nats://"+listen+"\n  user: agent\n  password: agent-pw\n  role: alert\n"+clientTLS)
	wrongPW := write("wrong.yaml", "nats:\n  url: nats://"+listen+"\n  user: agent\n  password: nope\n"+clientTLS)
	events := write("run.jsonl", `{"v":1,"runId":"tls-1","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{}}
`)

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	root := newRootCommand()
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"serve", "--config", serveCfg, "--rules", "../../examples/rules", "--workers", "1", "--no-store"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ponens serve: %v", err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stdout.String(), "gateway ") {
		if time.Now().After(deadline) {
			t.Fatalf("ponens serve did not start:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"auth      2 configured user(s)", "TLS, client certificates required"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("serve does not say %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nats", "credentials")); !os.IsNotExist(err) {
		t.Errorf("serve generated credentials although users are configured: %v", err)
	}
	if out, errOut, code := runPonens(t, "publish", "--config", agentCfg, events); code != exitOK || !strings.Contains(out, "1 stored") {
		t.Fatalf("the agent: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runPonens(t, "publish", "--config", wrongRole, events); code != exitBadInput || !strings.Contains(errOut, "not the alert role's") {
		t.Errorf("the agent's password in the alert role: exit %d: %s", code, errOut)
	}
	for name, cfg := range map[string]string{"no client certificate": noCert, "wrong password": wrongPW} {
		if _, errOut, code := runPonens(t, "publish", "--config", cfg, events); code != exitUnavailable || !strings.HasPrefix(errOut, "ponens publish: connect to ") {
			t.Errorf("%s: exit %d: %s", name, code, errOut)
		}
	}
}
