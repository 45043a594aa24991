package alert

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// The headers of a webhook delivery.
const (
	HeaderSignature = "X-Ponens-Signature" // "sha256=" and the hex HMAC of timestamp "." body
	HeaderTimestamp = "X-Ponens-Timestamp" // Unix seconds, inside the signed material
	HeaderDelivery  = "X-Ponens-Delivery"  // the verdict's identity: the same on every retry
)

// Subscription says which alerts someone wants and where to send them.
type Subscription struct {
	ID string `json:"id"`
	// Rules are globs on rule ids (path.Match syntax); empty matches all.
	Rules []string `json:"rules,omitempty"`
	// Statuses notified; empty means violated only.
	Statuses []schema.VerdictStatus `json:"statuses,omitempty"`
	// Agents and Projects restrict to these values when not empty.
	Agents   []string `json:"agents,omitempty"`
	Projects []string `json:"projects,omitempty"`
	// Subject is a NATS subject the alert is published on; with
	// authentication on, the alert role may publish only under
	// <prefix>.notify.>.
	Subject string `json:"subject,omitempty"`
	// Webhook is a URL the alert is POSTed to, signed with Secret.
	Webhook string `json:"webhook,omitempty"`
	// Slack is a Slack-compatible incoming webhook URL ({"text": ...}).
	Slack string `json:"slack,omitempty"`
	// Stream sends the alerts to the query service's server-sent event
	// stream GET /v1/subscriptions/{id}/stream, through the NATS subject
	// StreamSubject names (nothing is kept for a client that is not
	// connected).
	Stream bool   `json:"stream,omitempty"`
	Secret string `json:"secret,omitempty"`
	// GroupWait, when set, groups the alerts of each rule: the first
	// notification of a group goes GroupWait after its first alert and
	// carries the count of alerts so far; later ones at most every
	// GroupInterval (default GroupWait), for the alerts since.
	GroupWait     Duration `json:"groupWait,omitempty"`
	GroupInterval Duration `json:"groupInterval,omitempty"`
	// RepeatInterval, when set on a grouping subscription, notifies a
	// group again this long after its last notification when no alert
	// came since (the last notification, with Repeat set), until a silence
	// matches the group's alert.
	RepeatInterval Duration `json:"repeatInterval,omitempty"`
	// RateLimit, when set, is the most notifications sent per RatePeriod
	// (default a minute): an alert over it is not sent and is kept under
	// limited.<sub>.<delivery id>; a group due over it waits for the next
	// period, its alerts still counted.
	RateLimit  int      `json:"rateLimit,omitempty"`
	RatePeriod Duration `json:"ratePeriod,omitempty"`
	// MinSeverity, when set, keeps only the rules declared at least this
	// severe (see SeverityRank); a rule without a declared severity counts
	// as the most severe, so that nothing goes unnoticed by default.
	MinSeverity string `json:"minSeverity,omitempty"`
}

// severityRanks orders the severities rules declare: a gallery policy's
// info, warning and error, and a POLICY.md rule's warn, require_approval
// and block, compared case-insensitively.
var severityRanks = map[string]int{"info": 1, "low": 1, "warning": 2, "warn": 2, "medium": 2,
	"error": 3, "high": 3, "require_approval": 3, "block": 3, "critical": 4}

// SeverityRank is the rank of severity s (1 info to 4 critical), and
// whether s is one ponens orders. An empty severity ranks highest.
func SeverityRank(s string) (int, bool) {
	if s == "" {
		return 4, true
	}
	r, ok := severityRanks[strings.ToLower(s)]
	return r, ok
}

// Duration is a time.Duration written in JSON as text ("30s").
type Duration time.Duration

// MarshalJSON writes d as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s". Its error is a json.UnmarshalTypeError, so
// that the decoder names the field.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	err := json.Unmarshal(b, &s)
	var v time.Duration
	if err == nil {
		v, err = time.ParseDuration(s)
	}
	if err != nil {
		return &json.UnmarshalTypeError{Value: string(b) + ` (want a duration such as "30s")`, Type: reflect.TypeFor[Duration]()}
	}
	*d = Duration(v)
	return nil
}

// Validate names the first field of s that is missing or wrong.
func (s Subscription) Validate() error {
	if s.ID == "" || strings.ContainsAny(s.ID, ". *>") {
		return fmt.Errorf("subscription: field id: want a name without spaces, dots or wildcards, got %q", s.ID)
	}
	for _, g := range s.Rules {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("subscription %s: field rules: glob %q: %w", s.ID, g, err)
		}
	}
	if s.GroupWait < 0 || s.GroupInterval < 0 {
		return fmt.Errorf("subscription %s: fields groupWait, groupInterval: must not be negative", s.ID)
	}
	if err := s.validateLimits(); err != nil {
		return err
	}
	if _, ok := SeverityRank(s.MinSeverity); !ok {
		return fmt.Errorf("subscription %s: field minSeverity: unknown severity %q (want info, warning, error or critical; warn, require_approval and block are read too)", s.ID, s.MinSeverity)
	}
	for _, st := range s.Statuses {
		if !slices.Contains(schema.Statuses, st) {
			return fmt.Errorf("subscription %s: field statuses: unknown status %q", s.ID, st)
		}
	}
	channels := 0
	for _, set := range []bool{s.Subject != "", s.Webhook != "", s.Slack != "", s.Stream} {
		if set {
			channels++
		}
	}
	if channels != 1 {
		return fmt.Errorf("subscription %s: give exactly one channel: subject, webhook, slack or stream", s.ID)
	}
	return s.validateChannel()
}

// validateChannel checks the channel's target: a subject one can publish
// on, an http(s) URL, a secret that is not a listing's mask.
func (s Subscription) validateChannel() error {
	if s.Subject != "" && (strings.ContainsAny(s.Subject, "*> \t") || strings.HasPrefix(s.Subject, ".") || strings.HasSuffix(s.Subject, ".") || strings.Contains(s.Subject, "..")) {
		return fmt.Errorf("subscription %s: field subject: want a NATS subject to publish on (tokens separated by dots, no wildcards or spaces), got %q", s.ID, s.Subject)
	}
	for field, raw := range map[string]string{"webhook": s.Webhook, "slack": s.Slack} {
		if raw == "" {
			continue
		}
		if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("subscription %s: field %s: want an http or https URL with a host, got %q", s.ID, field, raw)
		}
	}
	if s.Secret != "" && strings.Trim(s.Secret, "*") == "" {
		return fmt.Errorf("subscription %s: field secret: %q is how a listing hides a secret; give the secret itself, or leave it out for none", s.ID, s.Secret)
	}
	return nil
}

// ValidateFor is Validate, and a subject channel under the fleet's
// <prefix>.notify. (of sub; the default prefix when it has none): the only
// subjects the alert stage may publish on when authentication is on, and
// the namespace alerts keep to when it is off.
func (s Subscription) ValidateFor(sub schema.Subjects) error {
	if err := s.Validate(); err != nil {
		return err
	}
	prefix := sub.Prefix
	if prefix == "" {
		prefix = schema.DefaultPrefix
	}
	if s.Subject != "" && !strings.HasPrefix(s.Subject, prefix+".notify.") {
		return fmt.Errorf("subscription %s: field subject: the alert stage publishes only under %s.notify., got %q", s.ID, prefix, s.Subject)
	}
	return nil
}

// Silence suppresses the alerts it matches until Ends; an empty field
// matches anything.
type Silence struct {
	ID    string    `json:"id"`
	Rule  string    `json:"rule,omitempty"` // a glob on the rule id
	Agent string    `json:"agent,omitempty"`
	Run   string    `json:"run,omitempty"`
	Ends  time.Time `json:"ends"`
}

// Notification is what a subscription channel receives.
type Notification struct {
	DeliveryID string               `json:"deliveryId"`
	Rule       string               `json:"rule"`
	Version    string               `json:"version,omitempty"`
	Severity   string               `json:"severity,omitempty"`
	Mode       schema.Mode          `json:"mode"`
	Status     schema.VerdictStatus `json:"status"`
	Run        string               `json:"run"`
	Agent      string               `json:"agent,omitempty"`
	Project    string               `json:"project,omitempty"`
	Subformula string               `json:"subformula,omitempty"`
	Event      *schema.Event        `json:"event,omitempty"`
	Link       string               `json:"link,omitempty"`
	// Count is the number of alerts a grouped notification stands for
	// (this one and the ones since the group's last notification).
	Count int `json:"count,omitempty"`
	// Repeat marks a group's notification sent again after the
	// subscription's repeatInterval, with no alert since (Count is the
	// last notification's).
	Repeat bool      `json:"repeat,omitempty"`
	At     time.Time `json:"at"`
}

// Notifier matches verdicts against the stored subscriptions and silences
// and delivers them, recording in the bucket what was delivered so that a
// restarted stage sends nothing twice.
type Notifier struct {
	nc   *nats.Conn
	kv   jetstream.KeyValue
	http *http.Client
	// DashboardURL prefixes the link to a run (<url>/runs/<run>).
	DashboardURL string
	// Subjects are the fleet's subjects: a stream subscription's alerts go
	// out on StreamSubject(Subjects, id). NewNotifier sets the default
	// prefix.
	Subjects schema.Subjects
	// Attempts is how many times a webhook is tried before its dead letter.
	Attempts int
	// Backoff is the first retry delay; it doubles, with jitter, each time.
	Backoff time.Duration
	// Refresh is how long the subscriptions and silences read from the
	// bucket are used before they are read again.
	Refresh time.Duration

	subs     []Subscription
	silences []Silence
	loaded   time.Time
}

// OpenStore creates or opens the alerts bucket.
func OpenStore(ctx context.Context, js jetstream.JetStream, s schema.Subjects) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: s.Bucket(schema.BucketAlerts)})
	if err != nil {
		return nil, fmt.Errorf("alert: bucket %s: %w", s.Bucket(schema.BucketAlerts), err)
	}
	return kv, nil
}

// NewNotifier returns a notifier over the alerts bucket kv.
func NewNotifier(nc *nats.Conn, kv jetstream.KeyValue) *Notifier {
	return &Notifier{nc: nc, kv: kv, Subjects: schema.Subjects{Prefix: schema.DefaultPrefix}, http: &http.Client{Timeout: 10 * time.Second}, Attempts: 5, Backoff: 200 * time.Millisecond, Refresh: time.Second}
}

// StreamSubject is the NATS subject the alerts of the stream subscription
// id go out on, for the query service to forward: under
// <prefix>.notify., which the alert role may publish to.
func StreamSubject(sub schema.Subjects, id string) string {
	return sub.Prefix + ".notify.stream." + id
}

// PutSubscription stores s after checking it.
func PutSubscription(ctx context.Context, kv jetstream.KeyValue, s Subscription) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return putJSON(ctx, kv, "sub."+s.ID, s)
}

// PutSilence stores a silence after checking it.
func PutSilence(ctx context.Context, kv jetstream.KeyValue, s Silence) error {
	if err := s.Validate(); err != nil {
		return err
	}
	return putJSON(ctx, kv, "silence."+s.ID, s)
}

func putJSON(ctx context.Context, kv jetstream.KeyValue, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, key, data)
	return err
}

// list decodes every value under prefix.
func list[T any](ctx context.Context, kv jetstream.KeyValue, prefix string) ([]T, error) {
	keys, err := kv.ListKeysFiltered(ctx, prefix+".*")
	if err != nil {
		return nil, err
	}
	var out []T
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return nil, fmt.Errorf("alert: key %s: %w", k, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Subscriptions lists the stored subscriptions.
func Subscriptions(ctx context.Context, kv jetstream.KeyValue) ([]Subscription, error) {
	return list[Subscription](ctx, kv, "sub")
}

// Silences lists the stored silences.
func Silences(ctx context.Context, kv jetstream.KeyValue) ([]Silence, error) {
	return list[Silence](ctx, kv, "silence")
}

// DeliveryID is the identity of a verdict: its run, rule and sequence.
func DeliveryID(v schema.VerdictEvent) string {
	return hex.EncodeToString(sha(v.RunID + "\x00" + v.Rule.ID + "\x00" + strconv.FormatUint(v.Seq, 10))[:12])
}

func sha(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// Sign is the signature header value of body sent at ts with secret.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// notification builds the alert of v routed by r.
func (n *Notifier) notification(v schema.VerdictEvent, r Route) Notification {
	id, version, _ := strings.Cut(v.Rule.ID, "@")
	if r.Rule != "" {
		id = r.Rule
	}
	out := Notification{DeliveryID: DeliveryID(v), Rule: id, Version: version, Severity: r.Severity, Mode: v.Mode, Status: v.Status,
		Run: v.RunID, Agent: r.Agent, Project: r.Project, At: time.Now().UTC()}
	if v.Cause != nil {
		ev := v.Cause.Event
		out.Subformula, out.Event = v.Cause.Subformula, &ev
		if ev.Start != nil && out.Agent == "" {
			out.Agent = ev.Start.Agent
		}
	}
	if n.DashboardURL != "" {
		out.Link = strings.TrimRight(n.DashboardURL, "/") + "/runs/" + v.RunID
	}
	return out
}

func matches(s Subscription, a Notification) bool {
	st := s.Statuses
	if len(st) == 0 {
		st = []schema.VerdictStatus{schema.StatusViolated}
	}
	if !slices.Contains(st, a.Status) {
		return false
	}
	if len(s.Agents) > 0 && !slices.Contains(s.Agents, a.Agent) || len(s.Projects) > 0 && !slices.Contains(s.Projects, a.Project) {
		return false
	}
	if s.MinSeverity != "" {
		want, _ := SeverityRank(s.MinSeverity)
		if got, ok := SeverityRank(a.Severity); ok && got < want {
			return false
		}
	}
	return len(s.Rules) == 0 || slices.ContainsFunc(s.Rules, func(g string) bool { ok, _ := path.Match(g, a.Rule); return ok })
}

func silenced(ss []Silence, a Notification, now time.Time) bool {
	return slices.ContainsFunc(ss, func(s Silence) bool {
		rule := s.Rule == "" || func() bool { ok, _ := path.Match(s.Rule, a.Rule); return ok }()
		return now.Before(s.Ends) && rule && (s.Agent == "" || s.Agent == a.Agent) && (s.Run == "" || s.Run == a.Run)
	})
}

// Notify delivers the verdict v to every matching, unsilenced subscription
// it was not yet delivered to. A delivery that exhausts its attempts is
// recorded as a dead letter (dead.<sub>.<delivery id>) and counts as done;
// an error is returned only when the bucket cannot be read or written, so
// that the verdict is not acknowledged and comes back.
func (n *Notifier) Notify(ctx context.Context, v schema.VerdictEvent, r Route) error {
	a := n.notification(v, r)
	subs, sil, err := n.load(ctx)
	if err != nil {
		return err
	}
	if silenced(sil, a, time.Now()) {
		return nil
	}
	for _, s := range subs {
		if !matches(s, a) {
			continue
		}
		if s.GroupWait > 0 {
			if err := n.addToGroup(ctx, s, a); err != nil {
				return err
			}
			continue
		}
		if err := n.notifyOne(ctx, s, a); err != nil {
			return err
		}
	}
	return nil
}

// notifyOne delivers a to the ungrouped subscription s unless it was
// before (sent.<sub>.<id>) or the rate limit held it back
// (limited.<sub>.<id>), and records the outcome: the status, and the
// alert as sent, dead (every attempt failed) or limited.
func (n *Notifier) notifyOne(ctx context.Context, s Subscription, a Notification) error {
	for _, done := range []string{"sent", "limited"} {
		if done == "limited" && s.RateLimit <= 0 {
			break
		}
		if _, err := n.kv.Get(ctx, done+"."+s.ID+"."+a.DeliveryID); err == nil {
			return nil // done before a restart
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return err
		}
	}
	ok, err := n.allow(ctx, s, time.Now())
	if err != nil {
		return err
	}
	if !ok {
		return putJSON(ctx, n.kv, "limited."+s.ID+"."+a.DeliveryID, a)
	}
	st := n.deliver(ctx, s, a)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := putJSON(ctx, n.kv, "status."+s.ID, st); err != nil {
		return err
	}
	done := "sent."
	if st.Error != "" {
		done = "dead."
	}
	return putJSON(ctx, n.kv, done+s.ID+"."+a.DeliveryID, a)
}

// load returns the subscriptions and silences, read from the bucket at
// most once per Refresh: a change takes effect within that time.
func (n *Notifier) load(ctx context.Context) ([]Subscription, []Silence, error) {
	if !n.loaded.IsZero() && time.Since(n.loaded) < n.Refresh {
		return n.subs, n.silences, nil
	}
	subs, err := Subscriptions(ctx, n.kv)
	if err != nil {
		return nil, nil, fmt.Errorf("alert: subscriptions: %w", err)
	}
	sil, err := Silences(ctx, n.kv)
	if err != nil {
		return nil, nil, fmt.Errorf("alert: silences: %w", err)
	}
	n.subs, n.silences, n.loaded = subs, sil, time.Now()
	return subs, sil, nil
}

// DeliveryStatus is the last outcome of a subscription's deliveries.
type DeliveryStatus struct {
	Delivery string    `json:"delivery"`
	Attempts int       `json:"attempts"`
	Status   int       `json:"status,omitempty"` // the last HTTP status
	Error    string    `json:"error,omitempty"`  // set when it went to the dead letters
	At       time.Time `json:"at"`
}

// deliver sends a to s's channel, retrying with exponential backoff and
// jitter up to n.Attempts times.
func (n *Notifier) deliver(ctx context.Context, s Subscription, a Notification) DeliveryStatus {
	st := DeliveryStatus{Delivery: a.DeliveryID}
	body, _ := json.Marshal(a)
	if s.Subject != "" || s.Stream {
		subject := s.Subject
		if s.Stream {
			subject = StreamSubject(n.Subjects, s.ID)
		}
		st.Attempts = 1
		if err := n.nc.Publish(subject, body); err != nil {
			st.Error = err.Error()
		}
		st.At = time.Now().UTC()
		return st
	}
	url := s.Webhook
	if s.Slack != "" {
		url = s.Slack
		body, _ = json.Marshal(map[string]string{"text": fmt.Sprintf("ponens: rule %s %s in run %s (%s) %s", a.Rule, a.Status, a.Run, a.Subformula, a.Link)})
	}
	wait := n.Backoff
	for st.Attempts = 1; ; st.Attempts++ {
		st.Status, st.Error = n.post(ctx, url, s.Secret, a.DeliveryID, body)
		st.At = time.Now().UTC()
		if st.Error == "" || st.Attempts >= n.Attempts || ctx.Err() != nil {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-time.After(wait/2 + rand.N(wait/2+1)):
		}
		wait *= 2
	}
}

// post makes one webhook attempt; an error is a transport failure or a
// status other than 2xx.
func (n *Notifier) post(ctx context.Context, url, secret, id string, body []byte) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, err.Error()
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	if secret != "" {
		req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, "HTTP " + resp.Status
	}
	return resp.StatusCode, ""
}

// Test sends a test alert (rule "ponens.test", a fresh delivery id) to the
// subscription id and returns how it went.
func (n *Notifier) Test(ctx context.Context, id string) (DeliveryStatus, error) {
	e, err := n.kv.Get(ctx, "sub."+id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return DeliveryStatus{}, fmt.Errorf("no subscription %q", id)
	}
	if err != nil {
		return DeliveryStatus{}, err
	}
	var s Subscription
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return DeliveryStatus{}, fmt.Errorf("subscription %s: %w", id, err)
	}
	a := n.notification(schema.VerdictEvent{RunID: "test", Seq: uint64(time.Now().UnixNano()), Rule: schema.RuleRef{ID: "ponens.test"}, Status: schema.StatusViolated, Mode: schema.ModeObserve}, Route{})
	return n.deliver(ctx, s, a), nil
}

// Delete removes the subscription or silence key ("sub.<id>",
// "silence.<id>").
func Delete(ctx context.Context, kv jetstream.KeyValue, key string) error {
	if _, err := kv.Get(ctx, key); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return kv.Delete(ctx, key)
}
