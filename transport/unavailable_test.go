package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

func TestUnavailable(t *testing.T) {
	api := func(status int, code natsjs.ErrorCode) error {
		return fmt.Errorf("key-value buckets: %w", &natsjs.APIError{Code: status, ErrorCode: code, Description: "x"})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"request timeout", fmt.Errorf("wrapped: %w", context.DeadlineExceeded), true},
		{"nats timeout", nats.ErrTimeout, true},
		{"no responders (a stream leader being elected)", nats.ErrNoResponders, true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"cluster not available (503, 10008)", api(503, 10008), true},
		{"replicas refused on one node (500, 10074)", api(500, 10074), false},
		{"stream offline (500, 10118)", api(500, 10118), true},
		{"placement with a peer offline (400, 10005)", &natsjs.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}, true},
		{"placement without storage (400, 10005)", &natsjs.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, insufficient storage"}, false},
		{"permission", nats.ErrPermissionViolation, false},
		{"jetstream not enabled", natsjs.ErrJetStreamNotEnabled, false},
		{"jetstream not enabled (API)", api(503, natsjs.JSErrCodeJetStreamNotEnabled), false},
		{"closed connection", nats.ErrConnectionClosed, false},
		{"bad content", &json.SyntaxError{Offset: 1}, false},
		{"cancelled", context.Canceled, false},
	} {
		if got := transport.Unavailable(c.err); got != c.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// A server that answers no JetStream request for the domain asked for
// refuses for good: the client maps that to "JetStream not enabled".
func TestNotAvailableOnADomainNobodyServes(t *testing.T) {
	_, nc, _ := jstest.Start(t)
	js, err := natsjs.NewWithDomain(nc, "nowhere")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = js.CreateOrUpdateKeyValue(ctx, natsjs.KeyValueConfig{Bucket: "b"})
	if err == nil || transport.Unavailable(err) {
		t.Fatalf("bucket on a domain nobody serves: %v; want an error that is not unavailability", err)
	}
	err = transport.CheckPartitions(ctx, js, schema.Subjects{Prefix: "ponens", Partitions: 8})
	if err == nil || transport.Unavailable(err) {
		t.Fatalf("partition check on a domain nobody serves: %v; want an error that is not unavailability", err)
	}
}
