package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// ErrNotFound is the error of deleting a subscription or silence that is
// not stored.
var ErrNotFound = errors.New("not stored")

// Validate names the first field of s that is missing or wrong: the id,
// the rule glob, or a missing end.
func (s Silence) Validate() error {
	if s.ID == "" || strings.ContainsAny(s.ID, ". *>") {
		return fmt.Errorf("silence: field id: want a name without spaces, dots or wildcards, got %q", s.ID)
	}
	if _, err := path.Match(s.Rule, ""); err != nil {
		return fmt.Errorf("silence %s: field rule: glob %q: %w", s.ID, s.Rule, err)
	}
	if s.Ends.IsZero() {
		return fmt.Errorf("silence %s: field ends: want the time the silence ends (RFC 3339)", s.ID)
	}
	return nil
}

// Delivery is what the bucket keeps of a subscription's deliveries: the
// last one (its delivery id, attempts, HTTP status and error), and how
// many notifications (alerts, or a group's) were delivered or went to the
// dead letters after every attempt failed, and how many alerts the rate
// limit held back.
type Delivery struct {
	LastDelivery string    `json:"lastDelivery,omitempty"`
	LastAttempts int       `json:"lastAttempts,omitempty"`
	LastStatus   int       `json:"lastStatus,omitempty"`
	LastError    string    `json:"lastError,omitempty"`
	LastAt       time.Time `json:"lastAt,omitzero"`
	Delivered    int       `json:"delivered"`
	Dead         int       `json:"dead"`
	RateLimited  int       `json:"rateLimited"`
}

// SubscriptionState is a subscription as the admin API shows it: without
// its secret (SecretSet says whether it has one) and with its delivery
// state.
type SubscriptionState struct {
	Subscription
	SecretSet bool     `json:"secretSet"`
	Delivery  Delivery `json:"delivery"`
}

// Store is the subscriptions and silences of an alerts bucket, as the
// query service's admin routes manage them.
type Store struct {
	KV jetstream.KeyValue
	// Subjects are the fleet's: a subject channel must be under their
	// <prefix>.notify. (the default prefix when empty).
	Subjects schema.Subjects
}

// InvalidError is a subscription or silence refused by its checks.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }

func (e *InvalidError) Unwrap() error { return e.Err }

// Subscriptions lists the stored subscriptions by id, each with its
// delivery state and without its secret.
func (st Store) Subscriptions(ctx context.Context) ([]SubscriptionState, error) {
	subs, err := Subscriptions(ctx, st.KV)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(subs, func(a, b Subscription) int { return strings.Compare(a.ID, b.ID) })
	out := make([]SubscriptionState, 0, len(subs))
	for _, s := range subs {
		d, err := st.delivery(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		secret := s.Secret != ""
		s.Secret = ""
		out = append(out, SubscriptionState{Subscription: s, SecretSet: secret, Delivery: d})
	}
	return out, nil
}

// delivery reads the delivery state of subscription id.
func (st Store) delivery(ctx context.Context, id string) (Delivery, error) {
	var d Delivery
	e, err := st.KV.Get(ctx, "status."+id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return d, err
	default:
		var last DeliveryStatus
		if err := json.Unmarshal(e.Value(), &last); err != nil {
			return d, fmt.Errorf("alert: key status.%s: %w", id, err)
		}
		d.LastDelivery, d.LastAttempts, d.LastStatus, d.LastError, d.LastAt = last.Delivery, last.Attempts, last.Status, last.Error, last.At
	}
	for _, c := range []struct {
		prefix string
		n      *int
	}{{"sent", &d.Delivered}, {"dead", &d.Dead}, {"limited", &d.RateLimited}} {
		if *c.n, err = st.count(ctx, c.prefix+"."+id+".*"); err != nil {
			return d, err
		}
	}
	return d, nil
}

// count is the number of keys matching filter.
func (st Store) count(ctx context.Context, filter string) (int, error) {
	keys, err := st.KV.ListKeysFiltered(ctx, filter)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	return n, nil
}

// PutSubscription stores s after checking it (Subscription.ValidateFor);
// a refusal is an *InvalidError.
func (st Store) PutSubscription(ctx context.Context, s Subscription) error {
	if err := s.ValidateFor(st.Subjects); err != nil {
		return &InvalidError{err}
	}
	return PutSubscription(ctx, st.KV, s)
}

// DeleteSubscription removes subscription id; ErrNotFound when there is
// none.
func (st Store) DeleteSubscription(ctx context.Context, id string) error {
	return st.remove(ctx, "sub."+id)
}

// Silences lists the stored silences by id.
func (st Store) Silences(ctx context.Context) ([]Silence, error) {
	sil, err := Silences(ctx, st.KV)
	slices.SortFunc(sil, func(a, b Silence) int { return strings.Compare(a.ID, b.ID) })
	return sil, err
}

// PutSilence stores s after checking it (Silence.Validate).
func (st Store) PutSilence(ctx context.Context, s Silence) error {
	return PutSilence(ctx, st.KV, s)
}

// DeleteSilence removes silence id; ErrNotFound when there is none.
func (st Store) DeleteSilence(ctx context.Context, id string) error {
	return st.remove(ctx, "silence."+id)
}

func (st Store) remove(ctx context.Context, key string) error {
	err := Delete(ctx, st.KV, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	return err
}
