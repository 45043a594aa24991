package alert

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// group is the state of one rule's alerts for a grouping subscription, in
// the bucket under group.<sub>.<hash of the rule>: the alerts not yet
// notified, the first of them, and when the group was last notified.
type group struct {
	Sub      string       `json:"sub"`
	Count    int          `json:"count"`
	First    Notification `json:"first"`
	Since    time.Time    `json:"since"`
	LastSent time.Time    `json:"lastSent,omitzero"`
	// LastCount is the count of the last notification, which a repeat
	// carries again.
	LastCount int `json:"lastCount,omitempty"`
}

func groupKey(sub, rule string) string {
	return "group." + sub + "." + hex.EncodeToString(sha(rule)[:8])
}

// addToGroup counts a in its group, durably, before the verdict is
// acknowledged; FlushGroups notifies.
func (n *Notifier) addToGroup(ctx context.Context, s Subscription, a Notification) error {
	key := groupKey(s.ID, a.Rule)
	for {
		var g group
		var rev uint64
		e, err := n.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &g); err != nil {
				return err
			}
		}
		if g.Count == 0 {
			g.Sub, g.First, g.Since = s.ID, a, time.Now().UTC()
		}
		g.Count++
		data, _ := json.Marshal(g)
		if rev == 0 {
			_, err = n.kv.Create(ctx, key, data)
		} else {
			_, err = n.kv.Update(ctx, key, data, rev)
		}
		if err == nil || !conflict(err) {
			return err
		}
	}
}

// FlushGroups sends one notification for each group that is due: GroupWait
// after its first alert, and then at most every GroupInterval; the count
// is reset after the send (a crash in between sends that count again). A
// group without new alerts is notified again RepeatInterval after its
// last notification, unless a silence matches it. A group due while its
// subscription's rate limit is reached waits, its alerts still counted.
func (n *Notifier) FlushGroups(ctx context.Context, now time.Time) error {
	subs, err := Subscriptions(ctx, n.kv)
	if err != nil {
		return err
	}
	sil, err := Silences(ctx, n.kv)
	if err != nil {
		return err
	}
	byID := map[string]Subscription{}
	for _, s := range subs {
		byID[s.ID] = s
	}
	keys, err := n.kv.ListKeysFiltered(ctx, "group.>")
	if err != nil {
		return err
	}
	for key := range keys.Keys() {
		e, err := n.kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var g group
		if json.Unmarshal(e.Value(), &g) != nil {
			continue
		}
		s, ok := byID[g.Sub]
		if !ok {
			_ = n.kv.Delete(ctx, key)
			continue
		}
		a, due := groupDue(s, g, sil, now)
		if !due {
			continue
		}
		if ok, err = n.allow(ctx, s, now); err != nil {
			return err
		} else if !ok {
			continue // the rate limit: the group waits, counted
		}
		st := n.deliver(ctx, s, a)
		if err := n.record(ctx, s, a, st); err != nil {
			return err
		}
		sent := a.Count
		if a.Repeat {
			sent = 0
		}
		if err := n.settle(ctx, key, e.Revision(), g, sent, now); err != nil {
			return err
		}
	}
	return nil
}

// record keeps the outcome st of group notification a of s: the status,
// and (but for a repeat) the notification as sent or, when every attempt
// failed, dead, under the delivery id of the group's first alert.
func (n *Notifier) record(ctx context.Context, s Subscription, a Notification, st DeliveryStatus) error {
	if err := putJSON(ctx, n.kv, "status."+s.ID, st); err != nil || a.Repeat {
		return err
	}
	done := "sent."
	if st.Error != "" {
		done = "dead."
	}
	return putJSON(ctx, n.kv, done+s.ID+"."+a.DeliveryID, a)
}

// groupDue is the notification of group g of s at now, and whether it is
// due: the alerts counted, GroupWait after the first or GroupInterval
// after the last notification; or, with none counted, the last
// notification again RepeatInterval after it, unless silenced.
func groupDue(s Subscription, g group, sil []Silence, now time.Time) (Notification, bool) {
	a := g.First
	a.Count = g.Count
	interval := time.Duration(s.GroupInterval)
	if interval <= 0 {
		interval = time.Duration(s.GroupWait)
	}
	switch {
	case g.Count > 0 && g.LastSent.IsZero():
		return a, now.Sub(g.Since) >= time.Duration(s.GroupWait)
	case g.Count > 0:
		return a, now.Sub(g.LastSent) >= interval
	case s.RepeatInterval <= 0 || g.LastSent.IsZero() || g.LastCount == 0:
		return a, false
	}
	a.Count, a.Repeat = g.LastCount, true
	return a, now.Sub(g.LastSent) >= time.Duration(s.RepeatInterval) && !silenced(sil, a, now)
}

// settle takes the sent alerts off group key (read at revision rev as
// cur) and records the notification at now; alerts added meanwhile stay
// counted.
func (n *Notifier) settle(ctx context.Context, key string, rev uint64, cur group, sent int, now time.Time) error {
	for {
		cur.Count, cur.LastSent = cur.Count-sent, now
		if sent > 0 {
			cur.LastCount = sent
		}
		data, _ := json.Marshal(cur)
		if _, err := n.kv.Update(ctx, key, data, rev); err == nil {
			return nil
		}
		e, err := n.kv.Get(ctx, key)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(e.Value(), &cur); err != nil {
			return err
		}
		rev = e.Revision()
	}
}

// flushLoop flushes the due groups every 50 ms until ctx ends.
func (n *Notifier) flushLoop(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := n.FlushGroups(ctx, now); err != nil && ctx.Err() == nil {
				slog.Warn("alert: grouped notifications", "err", err)
			}
		}
	}
}
