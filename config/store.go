package config

import (
	"fmt"
	"time"
)

// StoreConfig is where verdicts and events are stored for analytics: the
// embedded ClickHouse engine on a local directory by default, a ClickHouse
// server when DSN is set.
type StoreConfig struct {
	// Path is the data directory of the embedded engine.
	Path string `mapstructure:"path" yaml:"path"`
	// Lib is the path of libchdb.so, the embedded engine; empty looks in
	// PONENS_CHDB_LIB, CHDB_LIB_PATH, then where `make deps` installs it.
	Lib string `mapstructure:"lib" yaml:"lib"`
	// DSN, when set, stores into a ClickHouse server instead
	// (clickhouse://user:password@host:9000/db?secure=true). Prefer
	// PONENS_STORE_DSN to a file. It is never printed.
	DSN string `mapstructure:"dsn" yaml:"dsn"`
	// BatchRows is the most rows the sink writes in one insert.
	BatchRows int `mapstructure:"batch_rows" yaml:"batch_rows"`
	// FlushEvery is the longest a row waits before the sink writes it.
	FlushEvery time.Duration `mapstructure:"flush_every" yaml:"flush_every"`
	// AckWait is how long a batch read by a sink that died before it
	// acknowledged the batch waits before the stream delivers it again.
	AckWait time.Duration `mapstructure:"ack_wait" yaml:"ack_wait"`
}

// DefaultStore is the store section's defaults.
func DefaultStore() StoreConfig {
	return StoreConfig{Path: "data/store", BatchRows: 50000, FlushEvery: time.Second, AckWait: 30 * time.Second}
}

// validate checks the store section.
func (s StoreConfig) validate() []string {
	var errs []string
	if s.Path == "" && s.DSN == "" {
		errs = append(errs, "store.path: must be a directory when store.dsn is not set")
	}
	if s.BatchRows < 1 {
		errs = append(errs, fmt.Sprintf("store.batch_rows: must be at least 1, got %d", s.BatchRows))
	}
	if s.FlushEvery <= 0 {
		errs = append(errs, fmt.Sprintf("store.flush_every: must be positive, got %s", s.FlushEvery))
	}
	if s.AckWait < time.Second {
		errs = append(errs, fmt.Sprintf("store.ack_wait: must be at least 1s (longer than a batch's write), got %s", s.AckWait))
	}
	return errs
}
