package clickhouse

import (
	"errors"
	"fmt"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// ErrDSN marks a DSN that cannot name a server; its message names the
// setting (store.dsn) and never the DSN, which may hold a password.
var ErrDSN = errors.New("store.dsn")

// ParseDSN reads a DSN of the form
// clickhouse://user:password@host1:9000,host2:9000/db?secure=true into
// clickhouse-go's options: several addresses, credentials, database, TLS,
// and LZ4 compression unless the DSN names another.
func ParseDSN(dsn string) (*ch.Options, error) {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || scheme != "clickhouse" {
		return nil, fmt.Errorf("%w: must be clickhouse://[user[:password]@]host:port[,host:port…][/database][?param=value…]", ErrDSN)
	}
	o, err := ch.ParseDSN(dsn)
	if err != nil {
		// clickhouse-go redacts the credentials from its parse errors.
		return nil, fmt.Errorf("%w: %v", ErrDSN, err)
	}
	for _, a := range o.Addr {
		if a == "" || strings.HasPrefix(a, ":") {
			return nil, fmt.Errorf("%w: an address without a host (host:port, separated by commas)", ErrDSN)
		}
	}
	if o.Compression == nil {
		o.Compression = &ch.Compression{Method: ch.CompressionLZ4}
	}
	return o, nil
}
