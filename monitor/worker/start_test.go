package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// runWithin runs w until it returns or d passes, and returns its error and
// whether it returned in time.
func runWithin(w *Worker, d time.Duration) (error, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	select {
	case err := <-errc:
		return err, true
	case <-time.After(d + time.Second):
		return nil, false
	}
}

// A configuration the server refuses is no reason to wait: replicated
// buckets on a single node fail the start at once.
func TestStartFailsOnRefusedReplicas(t *testing.T) {
	nc, js := startJS(t)
	w, err := New(nc, js, Options{ID: "w", Subjects: subjects, Rules: rules(t), Logger: quiet, Replicas: 3, DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	err, returned := runWithin(w, 10*time.Second)
	if !returned || err == nil || !strings.Contains(err.Error(), "key-value buckets") {
		t.Fatalf("worker with 3 replicas on one node: returned %v, err %v; want a key-value bucket error", returned, err)
	}
	if transport.Unavailable(err) {
		t.Errorf("%v counts as unavailability", err)
	}
}

// A manifest entry that does not parse is reported, not waited on.
func TestStartFailsOnCorruptManifest(t *testing.T) {
	nc, js := startJS(t)
	set := rules(t)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, natsjs.KeyValueConfig{Bucket: bucket(subjects.Prefix, "rules")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, manifestKey(set.Rules[0].ID), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	w, err := New(nc, js, Options{ID: "w", Subjects: subjects, Rules: set, Logger: quiet, DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	err, returned := runWithin(w, 10*time.Second)
	if !returned || err == nil || !strings.Contains(err.Error(), set.Rules[0].ID) {
		t.Fatalf("corrupt manifest entry: returned %v, err %v; want an error naming rule %s", returned, err, set.Rules[0].ID)
	}
}

// While the cluster has no quorum (two nodes of three down) JetStream does
// not answer: the worker waits, owns nothing, takes a reload for the rules
// it will start with, and starts once a node comes back.
func TestStartWaitsForQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := jstest.Cluster(t, 3)
	nc, js := c.Connect()
	cfg := transport.StreamConfig{Prefix: subjects.Prefix, Partitions: testPartitions, Duplicates: 10 * time.Minute, Replicas: 3}
	if err := transport.Provision(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	c.Stop(1)
	c.Stop(2)
	set := rules(t)
	w, err := New(nc, js, Options{ID: "w", Subjects: subjects, Rules: set, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		LeaseTTL: 2 * time.Second, Replicas: 3, DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}()
	select {
	case err := <-errc:
		errc <- err
		t.Fatalf("Run returned %v without a quorum; want it to wait", err)
	case <-time.After(2 * time.Second):
	}
	without := *set
	without.Rules = slices.DeleteFunc(slices.Clone(set.Rules), func(r *ruleset.Rule) bool { return r.ID == "tests_before_commit" })
	rctx, rcancel := context.WithTimeout(ctx, 15*time.Second) // the worker takes it between two start attempts (each up to startAttempt)
	defer rcancel()
	if _, err := w.Reload(rctx, &without); !errors.Is(err, ErrStarting) {
		t.Errorf("Reload while starting = %v, want ErrStarting", err)
	}
	if len(w.Owned()) != 0 {
		t.Errorf("owns %v without a quorum", w.Owned())
	}
	c.Restart(1)
	waitFor(t, 90*time.Second, "the partitions to be owned once the quorum is back", func() bool { return len(w.Owned()) == testPartitions })
	inForce, _ := w.currentRules()
	var ids []string
	for _, r := range inForce.Rules {
		ids = append(ids, r.ID)
	}
	if len(ids) != len(without.Rules) || slices.Contains(ids, "tests_before_commit") {
		t.Errorf("rules in force after the start: %v; want the %d reloaded while waiting, without tests_before_commit", ids, len(without.Rules))
	}
}

// A user the server denies the JetStream API fails the start: the denial
// arrives asynchronously and the request only times out, which alone
// would look like a cluster settling.
func TestStartFailsWhenTheJetStreamAPIIsDenied(t *testing.T) {
	url := jstest.Plain(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "w", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Deny: []string{"$JS.API.>"}}}}}
	})
	nc, err := nats.Connect(url, nats.UserInfo("w", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(nc, js, Options{ID: "w", Subjects: subjects, Rules: rules(t), Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), DeadLetter: deadLetters(js)})
	if err != nil {
		t.Fatal(err)
	}
	err, returned := runWithin(w, 20*time.Second)
	if !returned || !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("JetStream API denied: returned %v, err %v; want a permissions violation", returned, err)
	}
}
