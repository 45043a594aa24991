package jetstream

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Unavailable reports whether a JetStream API request (making a stream or
// a bucket, reading one) failed with err only because the server or the
// cluster could not answer yet: a request that timed out (a cluster without
// a quorum, or electing its leaders, does not answer), a connection being
// re-established, or JetStream temporarily unavailable (503). Asking again
// later may succeed. A refusal is not unavailability: a configuration the
// server rejects (replicas on a single node, limits), missing permissions,
// no JetStream answering at all (not enabled on the server, or a domain
// nobody serves: no responders), a closed connection, or content that does
// not parse; asking again gives the same answer.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var api *natsjs.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case natsjs.JSErrCodeJetStreamNotEnabled, natsjs.JSErrCodeJetStreamNotEnabledForAccount:
			return false
		}
		return api.Code == 503
	}
	if errors.Is(err, natsjs.ErrJetStreamNotEnabled) || errors.Is(err, natsjs.ErrJetStreamNotEnabledForAccount) || errors.Is(err, nats.ErrNoResponders) {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || Retryable(err)
}
