package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

// RuleHistory is a rule's entry in the fleet's rule manifest (the
// <prefix>_rules key-value bucket): every meaning the rule has had, oldest
// first.
type RuleHistory struct {
	ID       string        `json:"id"`
	Versions []RuleVersion `json:"versions"`
}

// RuleVersion is one meaning of a rule. Its verdicts carry VerdictID: the
// rule's own id for version 1, "<id>@<version>" after. A rule whose meaning
// changes (ruleset.Set.Meaning) gets a new version, so its verdict stream
// starts afresh under an id of its own instead of mixing two meanings.
type RuleVersion struct {
	Version     int       `json:"version"`
	VerdictID   string    `json:"verdictId"`
	Meaning     string    `json:"meaning"` // sha256 of the meaning, hex
	Text        string    `json:"text"`
	Description string    `json:"description,omitempty"`
	Mode        string    `json:"mode"` // as declared
	Since       time.Time `json:"since"`
	// Removed is when a reload took the rule out of force. A rule put back
	// later gets a new version even with the same meaning: its verdicts
	// start afresh, with no history from before its removal.
	Removed *time.Time `json:"removed,omitempty"`
}

// RuleChange is what a reconciliation did to one rule.
type RuleChange struct {
	ID        string // the rule's id in its file
	VerdictID string // the id its verdicts carry from now on
	Kind      string // "added", "changed", "unchanged" or "removed" (an added rule may have been in force before)
}

// kvKeyChars are the characters a key-value key may hold as they are.
var kvKeyChars = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// manifestKey is the key of a rule id: the id itself when it is a plain
// token, otherwise "=" and the id in unpadded base64url.
func manifestKey(id string) string {
	if kvKeyChars.MatchString(id) {
		return id
	}
	return "=" + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// reconcile records set's rules in the manifest bucket and returns the set
// with each rule under the id its verdicts carry. A rule met for the first
// time is version 1; a rule whose meaning differs from its latest version
// gets the next version (never an older one back: that version's verdicts
// are history). Concurrent workers agree through compare-and-set.
func reconcile(ctx context.Context, kv jetstream.KeyValue, set *ruleset.Set) (*ruleset.Set, []RuleChange, error) {
	ids := map[string]string{}
	changes := make([]RuleChange, 0, len(set.Rules))
	for _, r := range set.Rules {
		v := RuleVersion{Meaning: set.Meaning(r), Text: r.Text, Description: r.Description, Mode: string(r.Mode), Since: time.Now().UTC()}
		c, err := recordRule(ctx, kv, r.ID, v)
		if err != nil {
			return nil, nil, fmt.Errorf("rule manifest: rule %s: %w", r.ID, err)
		}
		if c.VerdictID != r.ID {
			ids[r.ID] = c.VerdictID
		}
		changes = append(changes, c)
	}
	return set.Renamed(ids), changes, nil
}

// recordRule adds v to the history of rule id unless its latest version
// has the same meaning, retrying when another worker wrote in between.
func recordRule(ctx context.Context, kv jetstream.KeyValue, id string, v RuleVersion) (RuleChange, error) {
	key := manifestKey(id)
	for range 10 {
		var h RuleHistory
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return RuleChange{}, err
		default:
			if err := json.Unmarshal(e.Value(), &h); err != nil {
				return RuleChange{}, fmt.Errorf("key %s: %w", key, err)
			}
			rev = e.Revision()
		}
		kind := "added"
		if n := len(h.Versions); n > 0 {
			last := h.Versions[n-1]
			switch {
			case last.Removed != nil: // put back: a new version, "added"
			case last.Meaning == v.Meaning:
				return RuleChange{ID: id, VerdictID: last.VerdictID, Kind: "unchanged"}, nil
			default:
				kind = "changed"
			}
		}
		h.ID = id
		v.Version = len(h.Versions) + 1
		v.VerdictID = id
		if v.Version > 1 {
			v.VerdictID = id + "@" + strconv.Itoa(v.Version)
		}
		h.Versions = append(h.Versions, v)
		data, err := json.Marshal(h)
		if err != nil {
			return RuleChange{}, err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, data)
		} else {
			_, err = kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return RuleChange{ID: id, VerdictID: v.VerdictID, Kind: kind}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return RuleChange{}, err
		}
	}
	return RuleChange{}, errors.New("the manifest kept changing under this worker")
}

// markRemoved records that rule id was taken out of force.
func markRemoved(ctx context.Context, kv jetstream.KeyValue, id string) error {
	key := manifestKey(id)
	for range 10 {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var h RuleHistory
		if err := json.Unmarshal(e.Value(), &h); err != nil {
			return fmt.Errorf("key %s: %w", key, err)
		}
		n := len(h.Versions)
		if n == 0 || h.Versions[n-1].Removed != nil {
			return nil
		}
		now := time.Now().UTC()
		h.Versions[n-1].Removed = &now
		data, err := json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = kv.Update(ctx, key, data, e.Revision())
		if err == nil || !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
	}
	return errors.New("the manifest kept changing under this worker")
}

// Manifest returns the fleet's rule manifest, one history per rule id ever
// recorded, sorted by id.
func Manifest(ctx context.Context, js jetstream.JetStream, prefix string) ([]RuleHistory, error) {
	kv, err := js.KeyValue(ctx, bucket(prefix, schema.BucketRules))
	if err != nil {
		return nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []RuleHistory
	for key := range keys.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		var h RuleHistory
		if err := json.Unmarshal(e.Value(), &h); err != nil {
			return nil, fmt.Errorf("rule manifest: key %s: %w", key, err)
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b RuleHistory) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
