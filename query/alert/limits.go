package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// validateLimits names the first of s's repeat and rate fields that is
// wrong.
func (s Subscription) validateLimits() error {
	switch {
	case s.RepeatInterval < 0:
		return fmt.Errorf("subscription %s: field repeatInterval: must not be negative", s.ID)
	case s.RepeatInterval > 0 && s.GroupWait == 0:
		return fmt.Errorf("subscription %s: field repeatInterval: groups are repeated: set groupWait too", s.ID)
	case s.RateLimit < 0:
		return fmt.Errorf("subscription %s: field rateLimit: must not be negative, got %d", s.ID, s.RateLimit)
	case s.RatePeriod < 0:
		return fmt.Errorf("subscription %s: field ratePeriod: must not be negative", s.ID)
	case s.RatePeriod > 0 && s.RateLimit == 0:
		return fmt.Errorf("subscription %s: field ratePeriod: set rateLimit, the notifications per period", s.ID)
	}
	return nil
}

// rateWindow is a subscription's current rate-limit period, in the bucket
// under rate.<sub>: when it began and the notifications sent in it.
type rateWindow struct {
	Start time.Time `json:"start"`
	Count int       `json:"count"`
}

// allow reports whether s may send one more notification at now, and
// counts it: at most s.RateLimit per s.RatePeriod (a minute by default),
// in fixed periods that begin with the first notification after the last
// one ended. The count is kept in the bucket, updated by revision, so
// that alert stages sharing the bucket share the limit.
func (n *Notifier) allow(ctx context.Context, s Subscription, now time.Time) (bool, error) {
	if s.RateLimit <= 0 {
		return true, nil
	}
	period := time.Duration(s.RatePeriod)
	if period <= 0 {
		period = time.Minute
	}
	key := "rate." + s.ID
	for {
		var w rateWindow
		var rev uint64
		e, err := n.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return false, err
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &w); err != nil {
				return false, fmt.Errorf("alert: key %s: %w", key, err)
			}
		}
		if now.Sub(w.Start) >= period || now.Before(w.Start) {
			w = rateWindow{Start: now}
		}
		if w.Count >= s.RateLimit {
			return false, nil
		}
		w.Count++
		data, _ := json.Marshal(w)
		if rev == 0 {
			_, err = n.kv.Create(ctx, key, data)
		} else {
			_, err = n.kv.Update(ctx, key, data, rev)
		}
		if err == nil || !conflict(err) {
			return err == nil, err
		}
	}
}

// conflict tells whether err is a write that lost a race on a key's
// revision (another writer was first): read again and retry.
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || strings.Contains(err.Error(), "wrong last sequence")
}
