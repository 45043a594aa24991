package clickhouse

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// A DSN gives several addresses, the credentials, the database, TLS, and
// LZ4 unless it names another compression.
func TestParseDSN(t *testing.T) {
	o, err := ParseDSN("clickhouse://ponens:s3cr%23t@ch1.example:9440,ch2.example:9440/analytics?secure=true&dial_timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ch1.example:9440", "ch2.example:9440"}; !slices.Equal(o.Addr, want) {
		t.Errorf("addresses %v, want %v", o.Addr, want)
	}
	if o.Auth.Username != "ponens" || o.Auth.Password != "s3cr#t" || o.Auth.Database != "analytics" {
		t.Errorf("auth %+v", o.Auth)
	}
	if o.TLS == nil || o.TLS.InsecureSkipVerify {
		t.Errorf("secure=true: TLS %+v, want a verifying TLS config", o.TLS)
	}
	if o.Compression == nil || o.Compression.Method != ch.CompressionLZ4 {
		t.Errorf("compression %+v, want LZ4", o.Compression)
	}
	if o.DialTimeout != 3*time.Second {
		t.Errorf("dial timeout %s", o.DialTimeout)
	}
	plain, err := ParseDSN("clickhouse://localhost:9000?compress=zstd")
	if err != nil {
		t.Fatal(err)
	}
	if plain.TLS != nil || plain.Compression.Method != ch.CompressionZSTD {
		t.Errorf("plain: TLS %v, compression %+v (want none, and the zstd it names)", plain.TLS, plain.Compression)
	}
}

// A DSN that names no server is an error that names store.dsn and never
// the password.
func TestParseDSNErrors(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"http://u:hunter2@localhost:8123/db", "must be clickhouse://"},
		{"localhost:9000", "must be clickhouse://"},
		{"clickhouse://u:hunter2@/db", "address"},
		{"clickhouse:///db", "address"},
		{"clickhouse://u:hunter2@:9000/db", "an address without a host"},
		{"clickhouse://u:hunter2@localhost:9000/db?dial_timeout=soon", "dial timeout"},
		{"clickhouse://u:hunter2@localhost:9000/db?tls_server_name=x", "tls_server_name requires secure=true"},
		{"clickhouse://u:hunter2@local host:9000/db", "store.dsn"},
	} {
		_, err := ParseDSN(tc.dsn)
		if !errors.Is(err, ErrDSN) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "store.dsn: ") {
			t.Errorf("%s: got %v, want store.dsn: …%s…", tc.dsn, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", tc.dsn, err)
		}
	}
}

// A server that does not answer is ErrUnreachable, naming the address.
func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Open(ctx, "clickhouse://u:hunter2@127.0.0.1:1/db?dial_timeout=1s")
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("got %v, want ErrUnreachable naming 127.0.0.1:1 without the password", err)
	}
}
