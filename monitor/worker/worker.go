package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

// Options configure a worker. Zero durations and sizes take the defaults of
// DefaultOptions.
type Options struct {
	// ID names the worker among the live ones; it must be unique.
	ID       string
	Subjects schema.Subjects
	Rules    *ruleset.Set

	// LeaseTTL is how long a lease or a membership outlives the last
	// renewal: a dead worker's partitions move after about this long.
	LeaseTTL time.Duration
	// CheckpointEvery is how often a partition stores its checkpoint and
	// acks what it covers.
	CheckpointEvery time.Duration
	// IdleAfter ends a run with no event for this long, as ended without
	// run.finish.
	IdleAfter time.Duration
	// GapTimeout is how long a run waits for a missing seq before the gap
	// becomes a dead letter and an error verdict and the run moves on.
	GapTimeout time.Duration
	// MaxBuffered bounds the out-of-order events held per run.
	MaxBuffered int
	// MaxEventBytes bounds an event; a larger one is a dead letter.
	MaxEventBytes int
	// FetchBatch is how many messages a partition asks for at a time.
	FetchBatch int
	// Replicas is the number of copies of the key-value buckets (leases,
	// checkpoints, the rule manifest): as many as the streams have, so that
	// losing a node of a cluster loses no partition's state. 0 means 1.
	Replicas int

	// DeadLetter receives every event the worker refuses, with a reason
	// code (schema.HeaderReason values) and the error naming the field.
	DeadLetter func(ctx context.Context, reason string, err error, payload []byte) error
	// Violated, when set, is told of every violated verdict the worker
	// publishes, with the agent its run.start named ("" when none). It is
	// called on a partition's goroutine: it must return quickly.
	Violated func(v *schema.VerdictEvent, agent string)
	Logger   *slog.Logger
}

// DefaultOptions returns the defaults of every tunable.
func DefaultOptions() Options {
	return Options{
		Subjects:        schema.Subjects{Prefix: schema.DefaultPrefix, Partitions: schema.DefaultPartitions},
		LeaseTTL:        3 * time.Second,
		CheckpointEvery: 250 * time.Millisecond,
		IdleAfter:       10 * time.Minute,
		GapTimeout:      5 * time.Second,
		MaxBuffered:     1024,
		MaxEventBytes:   1 << 20,
		FetchBatch:      256,
	}
}

func (o *Options) fill() {
	d := DefaultOptions()
	if o.Subjects.Prefix == "" {
		o.Subjects.Prefix = d.Subjects.Prefix
	}
	if o.Subjects.Partitions == 0 {
		o.Subjects.Partitions = d.Subjects.Partitions
	}
	for _, f := range []struct{ v, d *time.Duration }{
		{&o.LeaseTTL, &d.LeaseTTL}, {&o.CheckpointEvery, &d.CheckpointEvery},
		{&o.IdleAfter, &d.IdleAfter}, {&o.GapTimeout, &d.GapTimeout},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	for _, f := range []struct{ v, d *int }{
		{&o.MaxBuffered, &d.MaxBuffered}, {&o.MaxEventBytes, &d.MaxEventBytes}, {&o.FetchBatch, &d.FetchBatch},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DeadLetter == nil {
		o.DeadLetter = func(context.Context, string, error, []byte) error {
			return errors.New("no dead-letter sink configured")
		}
	}
}

// KV bucket names, under the subjects' prefix.
func bucket(prefix, name string) string { return schema.Subjects{Prefix: prefix}.Bucket(name) }

// Worker owns a share of the partitions and runs the monitor on each. It is
// safe to call Owned from any goroutine while Run runs.
type Worker struct {
	opts Options
	nc   *nats.Conn
	js   jetstream.JetStream

	members, leases, checkpoints, manifest jetstream.KeyValue

	reloads chan reloadReq
	// fetchWait is how long a fetch waits for messages (tests shorten it).
	fetchWait time.Duration

	mu    sync.Mutex
	owned map[int]*partition
	rules *ruleset.Set      // in force: opts.Rules or the last reload, with verdict ids
	ids   map[string]string // verdict id → the rule's id in its file, for versions after the first
}

// reloadReq asks Run to put a new rule set in force.
type reloadReq struct {
	set   *ruleset.Set
	reply chan reloadResult
}

type reloadResult struct {
	changes []RuleChange
	err     error
}

// New prepares a worker; Run starts it.
func New(nc *nats.Conn, js jetstream.JetStream, opts Options) (*Worker, error) {
	opts.fill()
	if opts.ID == "" {
		return nil, errors.New("worker: an ID is required")
	}
	if opts.Rules == nil {
		return nil, errors.New("worker: a rule set is required")
	}
	if err := compiles(opts.Rules); err != nil {
		return nil, err
	}
	return &Worker{opts: opts, nc: nc, js: js, owned: map[int]*partition{}, reloads: make(chan reloadReq), fetchWait: 50 * time.Millisecond}, nil
}

// Owned returns the partitions the worker owns now, sorted.
func (w *Worker) Owned() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, 0, len(w.owned))
	for k := range w.owned {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Run takes part in the fleet until ctx ends: it keeps its membership
// alive, takes the partitions rendezvous hashing gives it over the live
// workers (moving them when workers join or leave), and processes them.
// When ctx ends it checkpoints and releases every partition.
//
// At start it makes its buckets and writes the rule manifest. While NATS
// cannot answer (transport.Unavailable: a request timing out, a cluster still
// electing its leaders) it logs, waits and tries again, for as long as ctx
// lasts; a Reload meanwhile replaces the rules it will start with. Any
// other start error is returned: the stream partitioned otherwise than
// its options say (ErrPartitionChange), a configuration the server
// refuses (Replicas above the cluster's size), missing permissions, a
// manifest entry that does not parse. Once started it returns nil.
func (w *Worker) Run(ctx context.Context) error {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		actx, cancel := context.WithTimeout(ctx, startAttempt)
		err := w.start(actx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if !transport.Unavailable(err) {
			return err
		}
		if refused := transport.Refusal(w.nc, err); refused != nil {
			return fmt.Errorf("worker: %w", refused)
		}
		w.opts.Logger.Warn("worker: NATS is not available yet; trying again", "worker", w.opts.ID, "in", wait, "err", err)
		if err := w.waitStarting(ctx, wait); err != nil {
			return nil
		}
	}
	tick := time.NewTicker(w.opts.LeaseTTL / 3)
	defer tick.Stop()
	defer w.releaseAll()
	for {
		if err := w.balance(ctx); err != nil && ctx.Err() == nil {
			w.opts.Logger.Warn("worker: balance", "worker", w.opts.ID, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case req := <-w.reloads:
			changes, err := w.reload(ctx, req.set)
			req.reply <- reloadResult{changes, err}
		}
	}
}

// Reload puts set in force, keeping the state of every open run: each owned
// partition writes a checkpoint and starts again under the new rules,
// rebuilding its open runs by replay. Rules whose meaning changed get a new
// version in the manifest (RuleVersion) and, like rules that are new, the
// verdicts of every open run so far, as if they had been in force from the
// run's start; unchanged rules repeat nothing; removed rules stop. It
// returns what changed, or an error (and the old rules stay in force) when
// the manifest cannot be written. It waits for Run to take the request;
// while Run waits for NATS at start it returns ErrStarting.
func (w *Worker) Reload(ctx context.Context, set *ruleset.Set) ([]RuleChange, error) {
	req := reloadReq{set: set, reply: make(chan reloadResult, 1)}
	select {
	case w.reloads <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-req.reply:
		return res.changes, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// startAttempt bounds one attempt to start: its requests take milliseconds
// when NATS answers, and a context without a deadline would otherwise
// leave each to the client's default timeout, one with a distant deadline
// to that deadline.
const startAttempt = 5 * time.Second

// ErrStarting is what Reload returns while the worker waits for NATS at
// start: the new rules, which compile, replace those it will start with,
// and the start logs what changed against the manifest.
var ErrStarting = errors.New("worker: not started yet (waiting for NATS): the new rules take effect when it starts")

// waitStarting waits d between two start attempts, taking reloads: a rule
// set that compiles replaces the one to start with. It returns ctx's error
// when ctx ends first.
func (w *Worker) waitStarting(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case req := <-w.reloads:
			err := compiles(req.set)
			if err == nil {
				w.opts.Rules, err = req.set, ErrStarting
			}
			req.reply <- reloadResult{nil, err}
		}
	}
}

func (w *Worker) reload(ctx context.Context, set *ruleset.Set) ([]RuleChange, error) {
	if err := compiles(set); err != nil {
		return nil, err
	}
	eff, changes, err := reconcile(ctx, w.manifest, set)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, r := range set.Rules {
		kept[r.ID] = true
	}
	for _, r := range w.opts.Rules.Rules {
		if !kept[r.ID] {
			if err := markRemoved(ctx, w.manifest, r.ID); err != nil {
				w.opts.Logger.Warn("worker: rule manifest: marking a removed rule", "rule", r.ID, "err", err)
			}
			changes = append(changes, RuleChange{ID: r.ID, Kind: "removed"})
		}
	}
	w.opts.Rules = set
	before, _ := w.currentRules()
	w.setRules(eff, changes)
	w.logChanges(changes)
	if fingerprint(before) == fingerprint(eff) {
		return changes, nil // the same rules, modes and descriptions: nothing to restart
	}
	w.mu.Lock()
	owned := maps.Clone(w.owned)
	w.mu.Unlock()
	for k, p := range owned {
		w.keepAlive(ctx) // a restart can take up to LeaseTTL: renew before each
		w.restartPartition(ctx, k, p)
	}
	return changes, nil
}

// fingerprint sums up what a partition's engine depends on: each rule's
// verdict id, meaning, enforced mode and description, and the enforce
// switch.
func fingerprint(set *ruleset.Set) string {
	h := sha256.New()
	fmt.Fprintf(h, "enforce=%v\n", set.Enforce)
	for _, r := range set.Rules {
		fmt.Fprintf(h, "%q %s %s %q\n", r.ID, set.Meaning(r), set.Enforced(r), r.Description)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// heartbeat renews the worker's membership key.
func (w *Worker) heartbeat(ctx context.Context) error {
	_, err := w.members.Put(ctx, w.opts.ID, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	return err
}

// keepAlive renews the membership and the leases of the partitions owned,
// as balance does, during a long stretch between two balance rounds. A
// lease that cannot be renewed is left to the next balance round.
func (w *Worker) keepAlive(ctx context.Context) {
	if err := w.heartbeat(ctx); err != nil {
		w.opts.Logger.Warn("worker: membership", "worker", w.opts.ID, "err", err)
	}
	w.mu.Lock()
	owned := maps.Clone(w.owned)
	w.mu.Unlock()
	for k, p := range owned {
		if err := p.renew(ctx); err != nil {
			w.opts.Logger.Warn("worker: lease renewal", "partition", k, "err", err)
		}
	}
}

// compiles refuses a rule set of which the monitor cannot evaluate every
// rule: a worker runs all of its rules or none (a reload then keeps the
// rules in force).
func compiles(set *ruleset.Set) error {
	if _, errs := monitor.NewEngine(set); len(errs) > 0 {
		return fmt.Errorf("worker: rules the monitor cannot evaluate: %w", errors.Join(errs...))
	}
	return nil
}

func (w *Worker) setRules(set *ruleset.Set, changes []RuleChange) {
	ids := map[string]string{}
	for _, c := range changes {
		if c.VerdictID != "" && c.VerdictID != c.ID {
			ids[c.VerdictID] = c.ID
		}
	}
	w.mu.Lock()
	w.rules, w.ids = set, ids
	w.mu.Unlock()
}

// currentRules returns the rules in force and, for rules past their first
// version, the id in the file of each verdict id.
func (w *Worker) currentRules() (*ruleset.Set, map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rules, w.ids
}

func (w *Worker) logChanges(changes []RuleChange) {
	n := 0
	for _, c := range changes {
		if c.Kind == "changed" {
			w.opts.Logger.Info("worker: rule changed meaning: new version", "worker", w.opts.ID, "rule", c.ID, "verdicts", c.VerdictID)
			n++
		}
	}
	w.opts.Logger.Debug("worker: rules in force", "worker", w.opts.ID, "rules", len(changes), "changed", n)
}

// start checks the stream's partitions, opens the key-value buckets and
// brings the rule manifest up to date.
func (w *Worker) start(ctx context.Context) error {
	if err := transport.CheckPartitions(ctx, w.js, w.opts.Subjects); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if err := w.buckets(ctx); err != nil {
		return err
	}
	set, changes, err := reconcile(ctx, w.manifest, w.opts.Rules)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	w.setRules(set, changes)
	w.logChanges(changes)
	return nil
}

// buckets makes or opens the worker's key-value buckets.
func (w *Worker) buckets(ctx context.Context) error {
	p := w.opts.Subjects.Prefix
	var err error
	mk := func(name string, ttl time.Duration) jetstream.KeyValue {
		if err != nil {
			return nil
		}
		var kv jetstream.KeyValue
		kv, err = openBucket(ctx, w.js, jetstream.KeyValueConfig{Bucket: bucket(p, name), TTL: ttl, Replicas: max(w.opts.Replicas, 1)})
		return kv
	}
	w.members = mk(schema.BucketWorkers, w.opts.LeaseTTL)
	w.leases = mk(schema.BucketLeases, w.opts.LeaseTTL)
	w.checkpoints = mk(schema.BucketCheckpoints, 0)
	w.manifest = mk(schema.BucketRules, 0)
	if err != nil {
		return fmt.Errorf("worker: key-value buckets: %w", err)
	}
	return nil
}

// openBucket opens the bucket cfg names when it exists as cfg says, and
// makes or updates it otherwise: a worker whose buckets are as configured
// needs no right to change them.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		st, serr := kv.Status(ctx)
		if bs, ok := st.(*jetstream.KeyValueBucketStatus); serr == nil && ok && bs.TTL() == cfg.TTL && bs.Config().Replicas == cfg.Replicas {
			return kv, nil
		}
	}
	return js.CreateOrUpdateKeyValue(ctx, cfg)
}

// balance renews the membership and the owned leases, then gives up the
// partitions another worker should have and takes the free ones this one
// should have.
func (w *Worker) balance(ctx context.Context) error {
	if err := w.heartbeat(ctx); err != nil {
		return err
	}
	live, err := w.liveMembers(ctx)
	if err != nil {
		return err
	}
	for k := range w.opts.Subjects.Partitions {
		want := rendezvous(live, k) == w.opts.ID
		w.mu.Lock()
		p := w.owned[k]
		w.mu.Unlock()
		switch {
		case p != nil && p.failed():
			w.stopPartition(k, p, false)
		case p != nil && !want:
			w.stopPartition(k, p, true)
		case p != nil:
			if err := p.renew(ctx); err != nil {
				if ctx.Err() != nil {
					return nil // stopping: Run releases every partition gracefully
				}
				w.opts.Logger.Warn("worker: lease lost", "partition", k, "err", err)
				w.stopPartition(k, p, false)
			}
		case want:
			if err := w.startPartition(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
				w.opts.Logger.Warn("worker: take partition", "partition", k, "err", err)
			}
		}
	}
	return nil
}

func (w *Worker) liveMembers(ctx context.Context) ([]string, error) {
	keys, err := w.members.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return []string{w.opts.ID}, nil
	}
	if err != nil {
		return nil, err
	}
	if !slices.Contains(keys, w.opts.ID) {
		keys = append(keys, w.opts.ID)
	}
	return keys, nil
}

// rendezvous picks the member with the highest hash of (member, k): every
// worker computes the same owner from the same membership, and a change of
// membership moves only the partitions of the worker that came or went.
func rendezvous(members []string, k int) string {
	best, bestHash := "", uint64(0)
	for _, m := range members {
		h := fnv.New64a()
		h.Write([]byte(m))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(k)))
		if v := mix(h.Sum64()); best == "" || v > bestHash || v == bestHash && m < best {
			best, bestHash = m, v
		}
	}
	return best
}

// mix is MurmurHash3's 64-bit finaliser: FNV alone leaves the high bits of
// "w0/3" and "w1/3" too alike for a fair spread.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func leaseKey(k int) string { return "p" + strconv.Itoa(k) }

func (w *Worker) startPartition(ctx context.Context, k int) error {
	rev, err := w.leases.Create(ctx, leaseKey(k), []byte(w.opts.ID))
	if err != nil {
		return err
	}
	p, err := newPartition(ctx, w, k, rev)
	if err != nil {
		_ = w.leases.Delete(ctx, leaseKey(k), jetstream.LastRevision(rev))
		return err
	}
	w.mu.Lock()
	w.owned[k] = p
	w.mu.Unlock()
	w.opts.Logger.Debug("worker: took partition", "worker", w.opts.ID, "partition", k)
	return nil
}

// stopPartition stops processing k and releases its lease, so that the
// next owner starts at once (from the last checkpoint, which replay makes
// exact). A graceful stop first writes a last checkpoint.
func (w *Worker) stopPartition(k int, p *partition, graceful bool) {
	p.stop(graceful)
	w.mu.Lock()
	delete(w.owned, k)
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.LeaseTTL)
	defer cancel()
	_ = w.leases.Delete(ctx, leaseKey(k), jetstream.LastRevision(p.leaseRev()))
	w.opts.Logger.Debug("worker: gave up partition", "worker", w.opts.ID, "partition", k, "graceful", graceful)
}

// restartPartition gives partition k a fresh start under the rules in
// force, keeping its lease: a last checkpoint, then replay. When the new
// start fails the lease is released and balance takes the partition again.
func (w *Worker) restartPartition(ctx context.Context, k int, p *partition) {
	p.stop(true)
	np, err := newPartition(ctx, w, k, p.leaseRev())
	w.mu.Lock()
	if err == nil {
		w.owned[k] = np
	} else {
		delete(w.owned, k)
	}
	w.mu.Unlock()
	if err != nil {
		w.opts.Logger.Warn("worker: restart partition", "partition", k, "err", err)
		c, cancel := context.WithTimeout(context.Background(), w.opts.LeaseTTL)
		defer cancel()
		_ = w.leases.Delete(c, leaseKey(k), jetstream.LastRevision(p.leaseRev()))
	}
}

func (w *Worker) releaseAll() {
	w.mu.Lock()
	owned := make(map[int]*partition, len(w.owned))
	for k, p := range w.owned {
		owned[k] = p
	}
	w.mu.Unlock()
	for k, p := range owned {
		w.stopPartition(k, p, true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.LeaseTTL)
	defer cancel()
	_ = w.members.Delete(ctx, w.opts.ID)
}
