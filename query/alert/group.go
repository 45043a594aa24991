package alert

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
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
		if err == nil || !errors.Is(err, jetstream.ErrKeyExists) && !strings.Contains(err.Error(), "wrong last sequence") {
			return err
		}
	}
}

// FlushGroups sends one notification for each group that is due: GroupWait
// after its first alert, and then at most every GroupInterval; the count
// is reset after the send (a crash in between sends that count again).
func (n *Notifier) FlushGroups(ctx context.Context, now time.Time) error {
	subs, err := Subscriptions(ctx, n.kv)
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
		if json.Unmarshal(e.Value(), &g) != nil || g.Count == 0 {
			continue
		}
		s, ok := byID[g.Sub]
		if !ok {
			_ = n.kv.Delete(ctx, key)
			continue
		}
		interval := time.Duration(s.GroupInterval)
		if interval <= 0 {
			interval = time.Duration(s.GroupWait)
		}
		if g.LastSent.IsZero() && now.Sub(g.Since) < time.Duration(s.GroupWait) || !g.LastSent.IsZero() && now.Sub(g.LastSent) < interval {
			continue
		}
		a := g.First
		a.Count = g.Count
		st := n.deliver(ctx, s, a)
		if err := putJSON(ctx, n.kv, "status."+s.ID, st); err != nil {
			return err
		}
		// Take off what was sent; alerts added meanwhile stay counted.
		cur, rev := g, e.Revision()
		for {
			cur.Count, cur.LastSent = cur.Count-a.Count, now
			data, _ := json.Marshal(cur)
			if _, err := n.kv.Update(ctx, key, data, rev); err == nil {
				break
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
	return nil
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
