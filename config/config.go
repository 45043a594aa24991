// Package config is ponens's one typed configuration: every key has a
// default, and values come from a config file, PONENS_* environment
// variables and command-line flags, in increasing precedence, through viper.
// Unknown keys in a config file are rejected with their file and line.
package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
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
}

// TraceConfig bounds what the trace readers accept.
type TraceConfig struct {
	// MaxEventBytes is the largest event (one JSONL line) accepted.
	MaxEventBytes int `mapstructure:"max_event_bytes" yaml:"max_event_bytes"`
}

// RulesConfig configures rule evaluation.
type RulesConfig struct {
	// Enforce turns rule modes on; when false every rule only observes.
	Enforce bool `mapstructure:"enforce" yaml:"enforce"`
	// HighStakesPaths are path fragments or globs that make high_stakes_path
	// true, in addition to a trace's own high_stakes_paths.
	HighStakesPaths []string `mapstructure:"high_stakes_paths" yaml:"high_stakes_paths"`
}

// LogConfig configures logging.
type LogConfig struct {
	Level string `mapstructure:"level" yaml:"level"` // debug, info, warn, error
}

// Default returns the configuration with every default set.
func Default() Config {
	return Config{
		Trace: TraceConfig{MaxEventBytes: 1 << 20},
		Log:   LogConfig{Level: "info"},
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
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Sprintf("log.level: must be debug, info, warn or error, got %q", c.Log.Level))
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
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
