package config

import (
	"strings"
	"testing"
	"time"
)

func TestStoreValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*StoreConfig)
		want string
	}{
		{"no path", func(s *StoreConfig) { s.Path = "" }, "store.path: must be a directory when store.dsn is not set"},
		{"batch", func(s *StoreConfig) { s.BatchRows = 0 }, "store.batch_rows: must be at least 1, got 0"},
		{"flush", func(s *StoreConfig) { s.FlushEvery = 0 }, "store.flush_every: must be positive, got 0s"},
		{"ack wait", func(s *StoreConfig) { s.AckWait = 10 * time.Millisecond }, "store.ack_wait: must be at least 1s (longer than a batch's write), got 10ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c.Store)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	c := Default()
	c.Store.Path, c.Store.DSN = "", "clickhouse://127.0.0.1:9000"
	if err := c.Validate(); err != nil {
		t.Errorf("a server needs no path: %v", err)
	}
}

func TestStoreKeysFromEnv(t *testing.T) {
	t.Setenv("PONENS_STORE_DSN", "clickhouse://h:9000/db")
	t.Setenv("PONENS_STORE_FLUSH_EVERY", "250ms")
	c, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.DSN != "clickhouse://h:9000/db" || c.Store.FlushEvery != 250*time.Millisecond || c.Store.Path != "data/store" {
		t.Fatalf("got %+v", c.Store)
	}
}
