// Package config is ponens's one typed configuration: every key has a
// default, and values come from a config file, PONENS_* environment
// variables and command-line flags, in increasing precedence, through viper.
// Unknown keys in a config file are rejected with their file and line.
package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/ponens/ponens/schema"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"gopkg.in/yaml.v3"
)

// Config is every setting of ponens. Components take their own part of it,
// never the whole.
type Config struct {
	Trace TraceConfig `mapstructure:"trace" yaml:"trace"`
	Rules RulesConfig `mapstructure:"rules" yaml:"rules"`
	Log   LogConfig   `mapstructure:"log" yaml:"log"`

	NATS    NATSConfig    `mapstructure:"nats" yaml:"nats"`
	Gateway GatewayConfig `mapstructure:"gateway" yaml:"gateway"`
	Worker  WorkerConfig  `mapstructure:"worker" yaml:"worker"`
	Runtime RuntimeConfig `mapstructure:"runtime" yaml:"runtime"`
	Store   StoreConfig   `mapstructure:"store" yaml:"store"`
	Query   QueryConfig   `mapstructure:"query" yaml:"query"`
	Mapping MappingConfig `mapstructure:"mapping" yaml:"mapping"`
	OTLP    OTLPConfig    `mapstructure:"otlp" yaml:"otlp"`
}

// RuntimeConfig tunes the Go runtime of the long-running commands (serve,
// worker, ingest, bench).
type RuntimeConfig struct {
	// MemoryLimit is the soft memory limit of the Go heap (the runtime's
	// GOMEMLIMIT): near it the collector works harder instead of letting the
	// heap grow. "auto" sets it to 90% of the memory limit of the process's
	// cgroup (a container's limit), and to none when there is no such
	// limit; "off" sets none; a size such as "900MiB" or "2GiB" sets that.
	// The GOMEMLIMIT environment variable, when set, takes precedence.
	MemoryLimit string `mapstructure:"memory_limit" yaml:"memory_limit"`
}

// DefaultVerdictDuplicateWindow is the VERDICTS duplicate window when
// nats.verdict_duplicate_window is 0 and nats.max_age is not shorter.
const DefaultVerdictDuplicateWindow = 10 * time.Minute

// VerdictWindow is the VERDICTS duplicate window the configuration asks
// for (NATSConfig.VerdictDuplicateWindow).
func (n NATSConfig) VerdictWindow() time.Duration {
	if n.VerdictDuplicateWindow > 0 {
		return n.VerdictDuplicateWindow
	}
	if n.MaxAge > 0 && n.MaxAge < DefaultVerdictDuplicateWindow {
		return n.MaxAge
	}
	return DefaultVerdictDuplicateWindow
}

// MemoryLimitAuto and MemoryLimitOff are the two words RuntimeConfig.MemoryLimit
// takes besides a size.
const (
	MemoryLimitAuto = "auto"
	MemoryLimitOff  = "off"
)

// MinMemoryLimit is the smallest size runtime.memory_limit takes.
const MinMemoryLimit = 64 << 20

// ParseSize parses a size in bytes written as the Go runtime writes
// GOMEMLIMIT: a whole number with an optional unit B, KiB, MiB, GiB or TiB.
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, shift = n, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("must be a positive whole number of bytes with an optional unit B, KiB, MiB, GiB or TiB (such as 900MiB), got %q", s)
	}
	return n << shift, nil
}

// WorkerConfig tunes the monitor workers.
type WorkerConfig struct {
	// LeaseTTL is how long a worker's membership and partition leases
	// outlive their last renewal: a dead worker's partitions move after it.
	LeaseTTL time.Duration `mapstructure:"lease_ttl" yaml:"lease_ttl"`
	// CheckpointEvery is how often a partition checkpoints and acks.
	CheckpointEvery time.Duration `mapstructure:"checkpoint_every" yaml:"checkpoint_every"`
	// IdleAfter ends a run with no event for this long (its pending rules
	// become unresolved).
	IdleAfter time.Duration `mapstructure:"idle_after" yaml:"idle_after"`
	// GapTimeout is how long a run waits for a missing seq.
	GapTimeout time.Duration `mapstructure:"gap_timeout" yaml:"gap_timeout"`
	// MaxBuffered bounds the out-of-order events held per run.
	MaxBuffered int `mapstructure:"max_buffered" yaml:"max_buffered"`
}

func (w WorkerConfig) validate() []string {
	var errs []string
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"worker.lease_ttl", w.LeaseTTL}, {"worker.checkpoint_every", w.CheckpointEvery}, {"worker.idle_after", w.IdleAfter}, {"worker.gap_timeout", w.GapTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Sprintf("%s: must be positive, got %s", d.key, d.v))
		}
	}
	if w.MaxBuffered < 1 {
		errs = append(errs, fmt.Sprintf("worker.max_buffered: must be at least 1, got %d", w.MaxBuffered))
	}
	if w.CheckpointEvery >= w.LeaseTTL && w.LeaseTTL > 0 {
		errs = append(errs, fmt.Sprintf("worker.checkpoint_every: must be shorter than worker.lease_ttl (%s), got %s", w.LeaseTTL, w.CheckpointEvery))
	}
	return errs
}

// TraceConfig bounds what the trace readers accept.
type TraceConfig struct {
	// MaxEventBytes is the largest event (one JSONL line) accepted.
	MaxEventBytes int `mapstructure:"max_event_bytes" yaml:"max_event_bytes"`
	// MaxFileBytes is the largest trace file read; larger ones are refused
	// before they are read past it.
	MaxFileBytes int64 `mapstructure:"max_file_bytes" yaml:"max_file_bytes"`
	// MaxReferenceBytes is the largest reference trace (one JSON object)
	// decoded whole, which costs many times its size in memory. A check
	// with rules reads a clean larger one (and any clean one of 16 MiB or
	// more) as it goes instead, bounded by MaxFileBytes only.
	MaxReferenceBytes int64 `mapstructure:"max_reference_bytes" yaml:"max_reference_bytes"`
}

// RulesConfig configures rule evaluation.
type RulesConfig struct {
	// Enforce turns rule modes on; when false every rule only observes.
	Enforce bool `mapstructure:"enforce" yaml:"enforce"`
	// HighStakesPaths are path fragments or globs that make high_stakes_path
	// true, in addition to a trace's own high_stakes_paths.
	HighStakesPaths []string `mapstructure:"high_stakes_paths" yaml:"high_stakes_paths"`
	// Watch makes serve and worker reload the rules when a file under
	// their --rules paths changes (SIGHUP always reloads).
	Watch bool `mapstructure:"watch" yaml:"watch"`
	// MaxFileBytes is the largest rules file or POLICY.md read.
	MaxFileBytes int64 `mapstructure:"max_file_bytes" yaml:"max_file_bytes"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level string `mapstructure:"level" yaml:"level"` // debug, info, warn, error
}

// NATSConfig locates the NATS server and shapes the JetStream streams.
type NATSConfig struct {
	// URL is the server to connect to (nats://host:port, several
	// comma-separated for a cluster). Empty means the embedded server: `ponens
	// serve` starts it on Listen, and the other commands connect there.
	URL string `mapstructure:"url" yaml:"url"`
	// Prefix starts every subject (ponens.events.…).
	Prefix string `mapstructure:"prefix" yaml:"prefix"`
	// Partitions is the fixed number of EVENTS partitions, hence of monitor
	// shards. It cannot change once the stream exists.
	Partitions int `mapstructure:"partitions" yaml:"partitions"`
	// DuplicateWindow is how long the EVENTS stream remembers message ids:
	// an event published again within it is stored once. It must cover a
	// publisher's retries (the Go client's take at most about 35 seconds);
	// the server keeps about 100 bytes per event published within it.
	DuplicateWindow time.Duration `mapstructure:"duplicate_window" yaml:"duplicate_window"`
	// VerdictDuplicateWindow is the same for the VERDICTS stream: it must
	// cover the time from a worker's crash to the takeover of its
	// partitions, whose replay sends the verdicts since the last checkpoint
	// again. Verdicts are transitions only, so it costs little. 0 means
	// DefaultVerdictDuplicateWindow, or MaxAge when that is shorter.
	VerdictDuplicateWindow time.Duration `mapstructure:"verdict_duplicate_window" yaml:"verdict_duplicate_window"`
	// MaxAge is how long the streams keep messages (0: forever).
	MaxAge time.Duration `mapstructure:"max_age" yaml:"max_age"`
	// Replicas is the number of copies of each stream (at most the number of
	// cluster nodes; 1 for the embedded server).
	Replicas int `mapstructure:"replicas" yaml:"replicas"`
	// StartWait is how long the commands that serve (serve, worker, ingest)
	// wait at start for the server at URL to be reachable and for JetStream
	// to answer (a cluster electing its leaders), trying again meanwhile;
	// 0 fails at once. The one-shot commands (publish, demo, manifest,
	// bench) never wait.
	StartWait time.Duration `mapstructure:"start_wait" yaml:"start_wait"`
	// StoreDir is where the embedded server keeps its streams.
	StoreDir string `mapstructure:"store_dir" yaml:"store_dir"`
	// Listen is the host:port the embedded server accepts clients on.
	Listen string `mapstructure:"listen" yaml:"listen"`

	// Events and Verdicts bound those streams: at a bound new messages
	// are refused (publishers get an error, the gateway answers 503),
	// never stored ones evicted. 0 means no bound.
	Events   StreamLimits `mapstructure:"events" yaml:"events"`
	Verdicts StreamLimits `mapstructure:"verdicts" yaml:"verdicts"`
	// DeadLetters bounds the dead-letter stream, which drops its oldest
	// entries at the bound.
	DeadLetters DeadLetterLimits `mapstructure:"deadletters" yaml:"deadletters"`
	// LimitAlarm is the fraction of a stream's bound at which `serve` and
	// `ingest` log a warning and GET /v1/streams sets "alarm".
	LimitAlarm float64 `mapstructure:"limit_alarm" yaml:"limit_alarm"`

	// User and Password authenticate the clients of the commands with a
	// password (prefer PONENS_NATS_PASSWORD to a file). Never printed.
	User     string `mapstructure:"user" yaml:"user"`
	Password string `mapstructure:"password" yaml:"password"`
	// Role is the role (agent, gateway, worker, alert, sink, admin) of the
	// configured credentials: it names the reply subjects the client
	// subscribes to (_INBOX_<role>), which the server allows only to that
	// role. Empty: the user's name when it is a role's, else the role of
	// the command (publish and decide: agent; ingest: gateway; worker:
	// worker; manifest: sink; demo, bench and serve's provisioning: admin).
	Role string `mapstructure:"role" yaml:"role"`
	// NkeySeedFile is a file holding a user nkey seed to authenticate with.
	NkeySeedFile string `mapstructure:"nkey_seed_file" yaml:"nkey_seed_file"`
	// CredsFile is a NATS creds file (user JWT and seed) to authenticate
	// with, for a server in operator mode.
	CredsFile string `mapstructure:"creds_file" yaml:"creds_file"`
	// TLS is how the clients check the server's certificate and which
	// certificate they present.
	TLS ClientTLSConfig `mapstructure:"tls" yaml:"tls"`
	// Server configures who the embedded server accepts.
	Server ServerConfig `mapstructure:"server" yaml:"server"`
}

// StreamLimits bounds a stream in bytes and messages (0: no bound).
type StreamLimits struct {
	MaxBytes int64 `mapstructure:"max_bytes" yaml:"max_bytes"`
	MaxMsgs  int64 `mapstructure:"max_msgs" yaml:"max_msgs"`
}

// DeadLetterLimits bounds the dead-letter stream.
type DeadLetterLimits struct {
	// MaxBytes is the most the stream keeps (0: no bound).
	MaxBytes int64 `mapstructure:"max_bytes" yaml:"max_bytes"`
	// MaxAge is how long a dead letter is kept (0: nats.max_age).
	MaxAge time.Duration `mapstructure:"max_age" yaml:"max_age"`
}

// ClientTLSConfig is the TLS of the clients' connections to NATS.
type ClientTLSConfig struct {
	// CAFile is the CA (PEM) that signed the server's certificate; empty
	// trusts the system's roots.
	CAFile string `mapstructure:"ca_file" yaml:"ca_file"`
	// CertFile and KeyFile are the client certificate and its key (PEM),
	// for a server that requires client certificates.
	CertFile string `mapstructure:"cert_file" yaml:"cert_file"`
	KeyFile  string `mapstructure:"key_file" yaml:"key_file"`
}

// ServerConfig configures the authentication and TLS of the embedded
// server. With no user configured, ponens serve generates an nkey per
// role under <store_dir>/credentials and requires them.
type ServerConfig struct {
	Users ServerUsers     `mapstructure:"users" yaml:"users"`
	TLS   ServerTLSConfig `mapstructure:"tls" yaml:"tls"`
}

// ServerUsers has the credentials of each role's user: a password (the
// user name is the role's name) or an nkey public key.
type ServerUsers struct {
	Agent   UserConfig `mapstructure:"agent" yaml:"agent"`
	Gateway UserConfig `mapstructure:"gateway" yaml:"gateway"`
	Worker  UserConfig `mapstructure:"worker" yaml:"worker"`
	Alert   UserConfig `mapstructure:"alert" yaml:"alert"`
	Sink    UserConfig `mapstructure:"sink" yaml:"sink"`
	Admin   UserConfig `mapstructure:"admin" yaml:"admin"`
}

// UserConfig is how one role's user authenticates: a password or an nkey
// public key (starting with U), not both. Both empty: no such user.
type UserConfig struct {
	Password string `mapstructure:"password" yaml:"password"`
	Nkey     string `mapstructure:"nkey" yaml:"nkey"`
}

// ByRole returns the configured users by role name, in the order of the
// roles (agent, gateway, worker, alert, sink, admin); users with neither a
// password nor an nkey are left out.
func (u ServerUsers) ByRole() []RoleUser {
	var out []RoleUser
	for _, r := range []RoleUser{{"agent", u.Agent}, {"gateway", u.Gateway}, {"worker", u.Worker}, {"alert", u.Alert}, {"sink", u.Sink}, {"admin", u.Admin}} {
		if r.User != (UserConfig{}) {
			out = append(out, r)
		}
	}
	return out
}

// RoleUser is a role's name and its user.
type RoleUser struct {
	Role string
	User UserConfig
}

// ServerTLSConfig makes the embedded server require TLS.
type ServerTLSConfig struct {
	// CertFile and KeyFile are the server's certificate and key (PEM);
	// setting them turns TLS on.
	CertFile string `mapstructure:"cert_file" yaml:"cert_file"`
	KeyFile  string `mapstructure:"key_file" yaml:"key_file"`
	// CAFile is the CA (PEM) client certificates are checked with.
	CAFile string `mapstructure:"ca_file" yaml:"ca_file"`
	// ClientCerts requires every client to present a certificate CAFile
	// verifies.
	ClientCerts bool `mapstructure:"client_certs" yaml:"client_certs"`
}

// validateAuth checks the credentials and TLS settings of the nats
// section.
func (n NATSConfig) validateAuth() []string {
	var errs []string
	given := []string{}
	if n.User != "" || n.Password != "" {
		given = append(given, "nats.user/nats.password")
		if n.User == "" || n.Password == "" {
			errs = append(errs, "nats.user, nats.password: give both or neither")
		}
	}
	if n.NkeySeedFile != "" {
		given = append(given, "nats.nkey_seed_file")
	}
	if n.CredsFile != "" {
		given = append(given, "nats.creds_file")
	}
	if len(given) > 1 {
		errs = append(errs, fmt.Sprintf("%s: give one way to authenticate, not several", strings.Join(given, ", ")))
	}
	switch n.Role {
	case "", "agent", "gateway", "worker", "alert", "sink", "admin":
	default:
		errs = append(errs, fmt.Sprintf("nats.role: must be agent, gateway, worker, alert, sink or admin, got %q", n.Role))
	}
	if (n.TLS.CertFile == "") != (n.TLS.KeyFile == "") {
		errs = append(errs, "nats.tls.cert_file, nats.tls.key_file: give both or neither")
	}
	for _, u := range n.Server.Users.ByRole() {
		key := "nats.server.users." + u.Role
		switch {
		case u.User.Password != "" && u.User.Nkey != "":
			errs = append(errs, fmt.Sprintf("%s: give a password or an nkey, not both", key))
		case u.User.Nkey != "" && !strings.HasPrefix(u.User.Nkey, "U"):
			errs = append(errs, fmt.Sprintf("%s.nkey: must be a user public key (starting with U), got %q", key, u.User.Nkey))
		}
	}
	t := n.Server.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, "nats.server.tls.cert_file, nats.server.tls.key_file: give both or neither")
	}
	if t.ClientCerts && (t.CAFile == "" || t.CertFile == "") {
		errs = append(errs, "nats.server.tls.client_certs: needs nats.server.tls.ca_file to check them with, and the server's own cert_file and key_file")
	}
	return errs
}

// GatewayConfig configures the HTTP ingest gateway.
type GatewayConfig struct {
	// Listen is the host:port the gateway serves on.
	Listen string `mapstructure:"listen" yaml:"listen"`
	// MaxBodyBytes is the largest request body; larger ones get 413.
	MaxBodyBytes int64 `mapstructure:"max_body_bytes" yaml:"max_body_bytes"`
	// Token, when set, is the bearer token POSTs must carry. Prefer
	// PONENS_GATEWAY_TOKEN to a file or a flag. It is never printed.
	Token string `mapstructure:"token" yaml:"token"`
	// ReadTimeout bounds reading one request, body included.
	ReadTimeout time.Duration `mapstructure:"read_timeout" yaml:"read_timeout"`
	// WriteTimeout bounds handling one request after its headers.
	WriteTimeout time.Duration `mapstructure:"write_timeout" yaml:"write_timeout"`
	// IdleTimeout closes a kept-alive connection without requests.
	IdleTimeout time.Duration `mapstructure:"idle_timeout" yaml:"idle_timeout"`
	// MaxConcurrent is the most requests handled at once (more get 503).
	MaxConcurrent int `mapstructure:"max_concurrent" yaml:"max_concurrent"`
	// MaxInFlightBytes is the most request body bytes held at once (more
	// get 503); at least MaxBodyBytes.
	MaxInFlightBytes int64 `mapstructure:"max_inflight_bytes" yaml:"max_inflight_bytes"`
	// DeadLetterRate is how many bytes of refused input per second one
	// client host may add to the dead letters (0: no limit).
	DeadLetterRate int64 `mapstructure:"deadletter_rate" yaml:"deadletter_rate"`
}

// Default returns the configuration with every default set.
func Default() Config {
	return Config{
		Trace:   TraceConfig{MaxEventBytes: 1 << 20, MaxFileBytes: 1 << 30, MaxReferenceBytes: 16 << 20},
		Rules:   RulesConfig{Watch: true, MaxFileBytes: 4 << 20},
		Log:     LogConfig{Level: "info"},
		Runtime: RuntimeConfig{MemoryLimit: MemoryLimitAuto},
		Store:   DefaultStore(),
		Query:   DefaultQuery(),
		OTLP:    OTLPConfig{MaxBodyBytes: 20 << 20, ModelCalls: "telemetry"},
		NATS: NATSConfig{
			Prefix:          "ponens",
			Partitions:      schema.DefaultPartitions,
			DuplicateWindow: 2 * time.Minute,
			MaxAge:          168 * time.Hour,
			Replicas:        1,
			StartWait:       time.Minute,
			StoreDir:        "data/nats",
			Listen:          "127.0.0.1:4222",
			DeadLetters:     DeadLetterLimits{MaxBytes: 1 << 30},
			LimitAlarm:      0.8,
		},
		Gateway: GatewayConfig{
			Listen:           "127.0.0.1:8080",
			MaxBodyBytes:     8 << 20,
			ReadTimeout:      30 * time.Second,
			WriteTimeout:     time.Minute,
			IdleTimeout:      2 * time.Minute,
			MaxConcurrent:    64,
			MaxInFlightBytes: 64 << 20,
			DeadLetterRate:   1 << 20,
		},
		Worker: WorkerConfig{
			LeaseTTL:        3 * time.Second,
			CheckpointEvery: 250 * time.Millisecond,
			IdleAfter:       10 * time.Minute,
			GapTimeout:      5 * time.Second,
			MaxBuffered:     1024,
		},
	}
}

// EnvPrefix prefixes every environment variable: trace.max_event_bytes is
// PONENS_TRACE_MAX_EVENT_BYTES.
const EnvPrefix = "PONENS"

// Load reads the configuration: defaults, then the file (if path is not
// empty), then the environment, then the flags in fs that were set and whose
// names are config keys (a flag "enforce" may be bound to "rules.enforce"
// with binds). The result is validated.
func Load(path string, fs *pflag.FlagSet, binds map[string]string) (Config, error) {
	v := viper.New()
	def := Default()
	for key, val := range flatten(def) {
		v.SetDefault(key, val)
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		if err := checkKeys(path, data); err != nil {
			return Config{}, err
		}
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", path, err)
		}
	}
	for flag, key := range binds {
		if f := fs.Lookup(flag); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return Config{}, err
			}
		}
	}
	var c Config
	if err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) { dc.ErrorUnused = true }); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return c, c.Validate()
}

// Validate checks every value and names the key that is wrong.
func (c Config) Validate() error {
	var errs []string
	if c.Trace.MaxEventBytes < 1024 {
		errs = append(errs, fmt.Sprintf("trace.max_event_bytes: must be at least 1024, got %d", c.Trace.MaxEventBytes))
	}
	for _, l := range []struct {
		key string
		v   int64
	}{{"trace.max_file_bytes", c.Trace.MaxFileBytes}, {"trace.max_reference_bytes", c.Trace.MaxReferenceBytes}, {"rules.max_file_bytes", c.Rules.MaxFileBytes}} {
		if l.v < 1024 {
			errs = append(errs, fmt.Sprintf("%s: must be at least 1024, got %d", l.key, l.v))
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Sprintf("log.level: must be debug, info, warn or error, got %q", c.Log.Level))
	}
	errs = append(errs, c.NATS.validate()...)
	errs = append(errs, c.Gateway.validate()...)
	errs = append(errs, c.Worker.validate()...)
	errs = append(errs, c.Store.validate()...)
	errs = append(errs, c.Query.validate()...)
	errs = append(errs, c.checkVerdictWindow()...)
	errs = append(errs, c.OTLP.validate()...)
	switch c.Runtime.MemoryLimit {
	case MemoryLimitAuto, MemoryLimitOff:
	default:
		if n, err := ParseSize(c.Runtime.MemoryLimit); err != nil {
			errs = append(errs, fmt.Sprintf("runtime.memory_limit: must be auto, off or a size: %v", err))
		} else if n < MinMemoryLimit {
			errs = append(errs, fmt.Sprintf("runtime.memory_limit: must be at least 64MiB (the collector would run without pause), got %s", c.Runtime.MemoryLimit))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// checkVerdictWindow refuses a VERDICTS duplicate window that does not
// cover a worker's crash: the partition moves after worker.lease_ttl, and
// the new owner replays from the last checkpoint (at most
// worker.checkpoint_every old), sending those verdicts again. A window
// shorter than twice that would store some of them twice.
func (c Config) checkVerdictWindow() []string {
	if c.Worker.LeaseTTL <= 0 || c.Worker.CheckpointEvery <= 0 || c.NATS.VerdictDuplicateWindow < 0 {
		return nil // reported by the sections' own checks
	}
	need := 2 * (c.Worker.LeaseTTL + c.Worker.CheckpointEvery)
	if w := c.NATS.VerdictWindow(); w < need {
		return []string{fmt.Sprintf("nats.verdict_duplicate_window: must be at least twice worker.lease_ttl + worker.checkpoint_every (%s), so that verdicts a takeover sends again are stored once, got %s", need, w)}
	}
	return nil
}

// subjectPrefix is what nats.prefix may be: dot-separated subject tokens
// without wildcards.
var subjectPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// validate checks the nats section.
func (n NATSConfig) validate() []string {
	var errs []string
	if n.URL != "" {
		for _, u := range strings.Split(n.URL, ",") {
			if strings.TrimSpace(u) == "" || strings.ContainsAny(strings.TrimSpace(u), " \t") {
				errs = append(errs, fmt.Sprintf("nats.url: must be one or more comma-separated server URLs (nats://host:port), got %q", n.URL))
				break
			}
		}
	}
	if !subjectPrefix.MatchString(n.Prefix) {
		errs = append(errs, fmt.Sprintf("nats.prefix: must be dot-separated tokens of letters, digits, '-' and '_', got %q", n.Prefix))
	}
	if n.Partitions < 1 || n.Partitions > 4096 {
		errs = append(errs, fmt.Sprintf("nats.partitions: must be from 1 to 4096, got %d", n.Partitions))
	}
	windows := []struct {
		key     string
		d       time.Duration
		zeroDef bool // 0 takes a default
	}{{"nats.duplicate_window", n.DuplicateWindow, false}, {"nats.verdict_duplicate_window", n.VerdictDuplicateWindow, true}}
	for _, w := range windows {
		switch {
		case w.d < 0 || w.d == 0 && !w.zeroDef:
			errs = append(errs, fmt.Sprintf("%s: must be positive, got %s", w.key, w.d))
		case n.MaxAge > 0 && w.d > n.MaxAge:
			errs = append(errs, fmt.Sprintf("%s: must not exceed nats.max_age (%s), got %s", w.key, n.MaxAge, w.d))
		}
	}
	if n.StartWait < 0 {
		errs = append(errs, fmt.Sprintf("nats.start_wait: must not be negative (0 does not wait), got %s", n.StartWait))
	}
	if n.MaxAge < 0 {
		errs = append(errs, fmt.Sprintf("nats.max_age: must not be negative (0 keeps messages forever), got %s", n.MaxAge))
	}
	if n.Replicas < 1 || n.Replicas > 5 {
		errs = append(errs, fmt.Sprintf("nats.replicas: must be from 1 to 5, got %d", n.Replicas))
	}
	for _, l := range []struct {
		key string
		v   int64
	}{{"nats.events.max_bytes", n.Events.MaxBytes}, {"nats.events.max_msgs", n.Events.MaxMsgs},
		{"nats.verdicts.max_bytes", n.Verdicts.MaxBytes}, {"nats.verdicts.max_msgs", n.Verdicts.MaxMsgs},
		{"nats.deadletters.max_bytes", n.DeadLetters.MaxBytes}} {
		if l.v < 0 {
			errs = append(errs, fmt.Sprintf("%s: must not be negative (0: no bound), got %d", l.key, l.v))
		}
	}
	if n.DeadLetters.MaxAge < 0 {
		errs = append(errs, fmt.Sprintf("nats.deadletters.max_age: must not be negative (0: nats.max_age), got %s", n.DeadLetters.MaxAge))
	}
	if n.LimitAlarm <= 0 || n.LimitAlarm > 1 {
		errs = append(errs, fmt.Sprintf("nats.limit_alarm: must be a fraction above 0 and at most 1, got %g", n.LimitAlarm))
	}
	if n.URL == "" && n.StoreDir == "" {
		errs = append(errs, "nats.store_dir: must be set when nats.url is empty (the embedded server stores there)")
	}
	if err := checkHostPort(n.Listen); err != nil {
		errs = append(errs, fmt.Sprintf("nats.listen: %v", err))
	}
	return append(errs, n.validateAuth()...)
}

// validate checks the gateway section.
func (g GatewayConfig) validate() []string {
	var errs []string
	if err := checkHostPort(g.Listen); err != nil {
		errs = append(errs, fmt.Sprintf("gateway.listen: %v", err))
	}
	if g.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Sprintf("gateway.max_body_bytes: must be at least 1024, got %d", g.MaxBodyBytes))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"gateway.read_timeout", g.ReadTimeout}, {"gateway.write_timeout", g.WriteTimeout}, {"gateway.idle_timeout", g.IdleTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Sprintf("%s: must be positive, got %s", d.key, d.v))
		}
	}
	if g.DeadLetterRate < 0 {
		errs = append(errs, fmt.Sprintf("gateway.deadletter_rate: must not be negative (0: no limit), got %d", g.DeadLetterRate))
	}
	if g.MaxConcurrent < 1 {
		errs = append(errs, fmt.Sprintf("gateway.max_concurrent: must be at least 1, got %d", g.MaxConcurrent))
	}
	if g.MaxInFlightBytes < g.MaxBodyBytes {
		errs = append(errs, fmt.Sprintf("gateway.max_inflight_bytes: must be at least gateway.max_body_bytes (%d), or no request of that size is ever admitted, got %d", g.MaxBodyBytes, g.MaxInFlightBytes))
	}
	return errs
}

// checkHostPort checks a host:port listen address (port 0 picks a free one).
func checkHostPort(hp string) error {
	_, port, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("must be host:port, got %q", hp)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port must be a number from 0 to 65535, got %q", hp)
	}
	return nil
}

// Keys returns every configuration key with its default, sorted: what the
// README documents and `ponens config` prints.
func Keys() []string {
	flat := flatten(Default())
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// flatten maps dotted keys to default values by walking the struct tags.
func flatten(c Config) map[string]any {
	out := map[string]any{}
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			key := t.Field(i).Tag.Get("mapstructure")
			if prefix != "" {
				key = prefix + "." + key
			}
			if v.Field(i).Kind() == reflect.Struct {
				walk(key, v.Field(i))
				continue
			}
			out[key] = v.Field(i).Interface()
		}
	}
	walk("", reflect.ValueOf(c))
	return out
}

// checkKeys rejects keys a YAML config file has that Config does not, naming
// the file and line.
func checkKeys(path string, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	known := map[string]bool{}
	for k := range flatten(Default()) {
		parts := strings.Split(k, ".")
		for i := range parts {
			known[strings.Join(parts[:i+1], ".")] = true
		}
	}
	var errs []string
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + key
			}
			if !known[key] {
				errs = append(errs, fmt.Sprintf("%s:%d:%d: unknown key %q", path, k.Line, k.Column, key))
				continue
			}
			walk(key, n.Content[i+1])
		}
	}
	walk("", doc.Content[0])
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "\n"))
	}
	return nil
}
