package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// JetStream API error codes that mean a cluster is settling, not refusing.
const (
	errCodeNoSuitablePeers natsjs.ErrorCode = 10005 // "no suitable peers for placement", with "peer offline" while nodes are down
	errCodeStreamOffline   natsjs.ErrorCode = 10118 // every peer of the stream is down
)

// Unavailable reports whether a JetStream API request (making a stream or
// a bucket, reading one) failed with err only because the server or the
// cluster could not answer yet: a request that timed out (a cluster without
// a quorum answers nothing), a connection being re-established, no
// responders (a stream whose leader is still being elected serves no
// direct reads), JetStream temporarily unavailable (503), a stream all of
// whose peers are down, or no placement because a peer is offline. Asking
// again later may succeed. A refusal is not unavailability: a configuration
// the server rejects (more replicas than the cluster has nodes, limits),
// missing permissions, JetStream not enabled, a closed connection, or
// content that does not parse; asking again gives the same answer.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var api *natsjs.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case natsjs.JSErrCodeJetStreamNotEnabled, natsjs.JSErrCodeJetStreamNotEnabledForAccount:
			return false
		case errCodeStreamOffline:
			return true
		case errCodeNoSuitablePeers:
			return strings.Contains(api.Description, "peer offline")
		}
		return api.Code == 503
	}
	if errors.Is(err, natsjs.ErrJetStreamNotEnabled) || errors.Is(err, natsjs.ErrJetStreamNotEnabledForAccount) {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || Retryable(err)
}

// Refusal returns the error a request that failed with err on nc stands
// for when that is a refusal in disguise: the server denies publishing
// to the JetStream API (a permission violation arrives asynchronously, and
// the request itself only times out). Otherwise it returns nil.
func Refusal(nc *nats.Conn, err error) error {
	if err == nil {
		return nil
	}
	if last := nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) {
		return fmt.Errorf("%w (%v)", last, err)
	}
	return nil
}
