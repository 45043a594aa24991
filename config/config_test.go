package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// writeFile writes a config file into a temporary directory.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ponens.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	if c.NATS != want.NATS || c.Gateway != want.Gateway || c.Trace != want.Trace || c.Log != want.Log {
		t.Errorf("Load() = %+v, want the defaults %+v", c, want)
	}
	n := c.NATS
	if n.URL != "" || n.Prefix != "ponens" || n.Partitions != 8 || n.DuplicateWindow != 2*time.Minute || n.VerdictWindow() != 10*time.Minute ||
		n.MaxAge != 168*time.Hour || n.Replicas != 1 || n.StartWait != time.Minute || n.StoreDir != "data/nats" || n.Listen != "127.0.0.1:4222" {
		t.Errorf("nats defaults %+v", n)
	}
	g := c.Gateway
	if g.Listen != "127.0.0.1:8080" || g.MaxBodyBytes != 8<<20 || g.Token != "" {
		t.Errorf("gateway defaults %+v", g)
	}
	keys := strings.Join(Keys(), " ")
	for _, k := range []string{"nats.url", "nats.duplicate_window", "nats.store_dir", "gateway.max_body_bytes", "gateway.token"} {
		if !strings.Contains(keys, k) {
			t.Errorf("Keys() lacks %s: %s", k, keys)
		}
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("PONENS_NATS_PARTITIONS", "32")
	t.Setenv("PONENS_NATS_DUPLICATE_WINDOW", "5m")
	t.Setenv("PONENS_GATEWAY_TOKEN", "s3cret")
	c, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.NATS.Partitions != 32 || c.NATS.DuplicateWindow != 5*time.Minute || c.Gateway.Token != "s3cret" {
		t.Errorf("environment not applied: %+v %+v", c.NATS, c.Gateway)
	}
}

func TestFileAndFlags(t *testing.T) {
	p := writeFile(t, "nats:\n  url: nats://10.0.0.1:4222\n  max_age: 24h\ngateway:\n  max_body_bytes: 4096\n")
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("listen", "", "")
	if err := fs.Parse([]string{"--listen", "0.0.0.0:9090"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, fs, map[string]string{"listen": "gateway.listen"})
	if err != nil {
		t.Fatal(err)
	}
	if c.NATS.URL != "nats://10.0.0.1:4222" || c.NATS.MaxAge != 24*time.Hour || c.Gateway.MaxBodyBytes != 4096 || c.Gateway.Listen != "0.0.0.0:9090" {
		t.Errorf("file and flags not applied: %+v %+v", c.NATS, c.Gateway)
	}
}

func TestUnknownKey(t *testing.T) {
	p := writeFile(t, "nats:\n  prefix: acme\n  partition: 8\n")
	_, err := Load(p, nil, nil)
	if err == nil || !strings.Contains(err.Error(), p+`:3:3: unknown key "nats.partition"`) {
		t.Errorf("error = %v, want %s:3:3: unknown key", err, p)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"partitions", func(c *Config) { c.NATS.Partitions = 0 }, "nats.partitions: must be from 1 to 4096, got 0"},
		{"prefix", func(c *Config) { c.NATS.Prefix = "a.*" }, `nats.prefix: must be dot-separated tokens of letters, digits, '-' and '_', got "a.*"`},
		{"window", func(c *Config) { c.NATS.DuplicateWindow = 0 }, "nats.duplicate_window: must be positive, got 0s"},
		{"verdict window", func(c *Config) { c.NATS.VerdictDuplicateWindow = -time.Second }, "nats.verdict_duplicate_window: must be positive, got -1s"},
		{"negative start wait", func(c *Config) { c.NATS.StartWait = -time.Second }, "nats.start_wait: must not be negative (0 does not wait), got -1s"},
		{"window over age", func(c *Config) { c.NATS.MaxAge = time.Minute }, "nats.duplicate_window: must not exceed nats.max_age (1m0s), got 2m0s"},
		{"verdict window over age", func(c *Config) { c.NATS.MaxAge, c.NATS.VerdictDuplicateWindow = 5*time.Minute, 6*time.Minute }, "nats.verdict_duplicate_window: must not exceed nats.max_age (5m0s), got 6m0s"},
		{"verdict window under takeover", func(c *Config) { c.NATS.VerdictDuplicateWindow = 5 * time.Second },
			"nats.verdict_duplicate_window: must be at least twice worker.lease_ttl + worker.checkpoint_every (6.5s), so that verdicts a takeover sends again are stored once, got 5s"},
		{"takeover over verdict window", func(c *Config) { c.NATS.VerdictDuplicateWindow, c.Worker.LeaseTTL = time.Minute, 40*time.Second },
			"nats.verdict_duplicate_window: must be at least twice worker.lease_ttl + worker.checkpoint_every (1m20.5s)"},
		{"events bound", func(c *Config) { c.NATS.Events.MaxMsgs = -1 }, "nats.events.max_msgs: must not be negative (0: no bound), got -1"},
		{"dead letter age", func(c *Config) { c.NATS.DeadLetters.MaxAge = -time.Second }, "nats.deadletters.max_age: must not be negative"},
		{"limit alarm", func(c *Config) { c.NATS.LimitAlarm = 1.5 }, "nats.limit_alarm: must be a fraction above 0 and at most 1, got 1.5"},
		{"gateway budget", func(c *Config) { c.Gateway.MaxInFlightBytes = 1 << 20 }, "gateway.max_inflight_bytes: must be at least gateway.max_body_bytes (8388608)"},
		{"gateway read timeout", func(c *Config) { c.Gateway.ReadTimeout = 0 }, "gateway.read_timeout: must be positive, got 0s"},
		{"tiny memory limit", func(c *Config) { c.Runtime.MemoryLimit = "900" }, "runtime.memory_limit: must be at least 64MiB"},
		{"max age", func(c *Config) { c.NATS.MaxAge = -time.Second }, "nats.max_age: must not be negative"},
		{"replicas", func(c *Config) { c.NATS.Replicas = 7 }, "nats.replicas: must be from 1 to 5, got 7"},
		{"store", func(c *Config) { c.NATS.StoreDir = "" }, "nats.store_dir: must be set when nats.url is empty"},
		{"url", func(c *Config) { c.NATS.URL = "nats://a:1,,nats://b:2" }, "nats.url: must be one or more comma-separated server URLs"},
		{"nats listen", func(c *Config) { c.NATS.Listen = "4222" }, `nats.listen: must be host:port, got "4222"`},
		{"gateway listen", func(c *Config) { c.Gateway.Listen = "localhost:http" }, `gateway.listen: port must be a number from 0 to 65535, got "localhost:http"`},
		{"body", func(c *Config) { c.Gateway.MaxBodyBytes = 10 }, "gateway.max_body_bytes: must be at least 1024, got 10"},
		{"password without user", func(c *Config) { c.NATS.Password = "x" }, "nats.user, nats.password: give both or neither"},
		{"two ways to authenticate", func(c *Config) { c.NATS.User, c.NATS.Password, c.NATS.CredsFile = "a", "b", "c.creds" }, "nats.user/nats.password, nats.creds_file: give one way to authenticate"},
		{"role", func(c *Config) { c.NATS.Role = "root" }, `nats.role: must be agent, gateway, worker, alert, sink or admin, got "root"`},
		{"client cert without key", func(c *Config) { c.NATS.TLS.CertFile = "c.pem" }, "nats.tls.cert_file, nats.tls.key_file: give both or neither"},
		{"server user with both", func(c *Config) { c.NATS.Server.Users.Worker = UserConfig{Password: "p", Nkey: "UABC"} }, "nats.server.users.worker: give a password or an nkey, not both"},
		{"server user seed as nkey", func(c *Config) { c.NATS.Server.Users.Agent.Nkey = "SUABC" }, `nats.server.users.agent.nkey: must be a user public key (starting with U), got "SUABC"`},
		{"client certs without CA", func(c *Config) {
			c.NATS.Server.TLS = ServerTLSConfig{CertFile: "s.pem", KeyFile: "k.pem", ClientCerts: true}
		}, "nats.server.tls.client_certs: needs nats.server.tls.ca_file"},
		{"memory limit", func(c *Config) { c.Runtime.MemoryLimit = "1GB" }, `runtime.memory_limit: must be auto, off or a size: must be a positive whole number of bytes with an optional unit B, KiB, MiB, GiB or TiB (such as 900MiB), got "1GB"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := Default()
	c.NATS.URL, c.NATS.StoreDir = "nats://a:1", ""
	if err := c.Validate(); err != nil {
		t.Errorf("an external server needs no store_dir: %v", err)
	}
}

func TestWorkerKeys(t *testing.T) {
	t.Setenv("PONENS_WORKER_IDLE_AFTER", "90s")
	c, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Worker.IdleAfter.Seconds() != 90 || c.Worker.LeaseTTL.Seconds() != 3 {
		t.Errorf("worker config %+v", c.Worker)
	}
	t.Setenv("PONENS_WORKER_CHECKPOINT_EVERY", "5s")
	if _, err := Load("", nil, nil); err == nil || !strings.Contains(err.Error(), "worker.checkpoint_every: must be shorter than worker.lease_ttl") {
		t.Errorf("checkpoint slower than the lease: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "512B": 512, "4KiB": 4096, "900MiB": 900 << 20, "2GiB": 2 << 30, "1TiB": 1 << 40} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1.5GiB", "1GB", "MiB", "9999999999TiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
	if c := Default(); c.Runtime.MemoryLimit != MemoryLimitAuto {
		t.Errorf("runtime.memory_limit defaults to %q, want auto", c.Runtime.MemoryLimit)
	}
}

// TestVerdictWindow: the VERDICTS window defaults to 10 minutes, or to
// nats.max_age when that is shorter, so that a configuration with a short
// max_age that loaded before the key existed still loads.
func TestVerdictWindow(t *testing.T) {
	c := Default()
	c.NATS.MaxAge, c.NATS.DuplicateWindow = 5*time.Minute, time.Minute
	if err := c.Validate(); err != nil {
		t.Fatalf("max_age 5m, duplicate_window 1m: %v", err)
	}
	if got := c.NATS.VerdictWindow(); got != 5*time.Minute {
		t.Errorf("VerdictWindow with max_age 5m = %s, want 5m", got)
	}
	c.NATS.VerdictDuplicateWindow = 3 * time.Minute
	if got := c.NATS.VerdictWindow(); got != 3*time.Minute {
		t.Errorf("VerdictWindow set to 3m = %s", got)
	}
}

// TestAuthKeysFromEnv: the credentials and the embedded server's users
// come from PONENS_* variables like every key; a user set there is listed
// by role.
func TestAuthKeysFromEnv(t *testing.T) {
	t.Setenv("PONENS_NATS_SERVER_USERS_ADMIN_PASSWORD", "pw")
	t.Setenv("PONENS_NATS_NKEY_SEED_FILE", "/etc/ponens/agent.nk")
	t.Setenv("PONENS_NATS_TLS_CA_FILE", "/etc/ponens/ca.pem")
	c, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	users := c.NATS.Server.Users.ByRole()
	if len(users) != 1 || users[0].Role != "admin" || users[0].User.Password != "pw" {
		t.Fatalf("users %+v", users)
	}
	if c.NATS.NkeySeedFile != "/etc/ponens/agent.nk" || c.NATS.TLS.CAFile != "/etc/ponens/ca.pem" {
		t.Fatalf("nats %+v", c.NATS)
	}
}
