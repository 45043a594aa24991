package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/deployconf"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// The generated users file is what the generator writes now.
func TestNATSAuthUpToDate(t *testing.T) {
	c := config.Default()
	got, err := os.ReadFile(repoFile(t, deployconf.NATSAuthFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != deployconf.NATSAuth(c.NATS.Prefix, c.NATS.Partitions) {
		t.Fatalf("%s is out of date with the role permissions: run `go run ./internal/gen/natsauth`", deployconf.NATSAuthFile)
	}
}

// rolePassword is the password the tests give role r.
func rolePassword(r transport.Role) string { return "pw-" + string(r) }

// natsNodeOptions reads deploy/nats/nats.conf as node name reads it, with
// every role's password in the environment.
func natsNodeOptions(t *testing.T, name string) *server.Options {
	t.Helper()
	t.Setenv("NATS_SERVER_NAME", name)
	for _, r := range transport.Roles {
		t.Setenv(deployconf.PasswordVar(r), rolePassword(r))
	}
	opts, err := server.ProcessConfigFile(repoFile(t, "deploy/nats/nats.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/nats.conf: %v", err)
	}
	return opts
}

// The node configuration is a JetStream cluster node of the three named in
// docker-compose, with the six roles' users, each with exactly the
// permissions the embedded server gives that role.
func TestNATSConfig(t *testing.T) {
	opts := natsNodeOptions(t, "nats-2")
	c := config.Default()
	if opts.ServerName != "nats-2" || !opts.JetStream || opts.Cluster.Name == "" || opts.Port != 4222 || opts.Cluster.Port != 6222 {
		t.Errorf("server %q, JetStream %v, cluster %q, ports %d and %d", opts.ServerName, opts.JetStream, opts.Cluster.Name, opts.Port, opts.Cluster.Port)
	}
	var routes []string
	for _, u := range opts.Routes {
		routes = append(routes, u.Host)
	}
	if want := []string{"nats-1:6222", "nats-2:6222", "nats-3:6222"}; !slices.Equal(routes, want) {
		t.Errorf("routes %v, want %v", routes, want)
	}
	if opts.MaxPayload < int32(c.Trace.MaxEventBytes) {
		t.Errorf("max_payload %d is below trace.max_event_bytes %d: the largest event could not be published", opts.MaxPayload, c.Trace.MaxEventBytes)
	}
	sub := schema.Subjects{Prefix: c.NATS.Prefix, Partitions: c.NATS.Partitions}
	if len(opts.Users) != len(transport.Roles) {
		t.Fatalf("%d users, want one per role (%v)", len(opts.Users), transport.Roles)
	}
	for _, u := range opts.Users {
		want := transport.Permissions(transport.Role(u.Username), sub)
		if u.Password != rolePassword(transport.Role(u.Username)) {
			t.Errorf("user %s: the password is not the one in %s", u.Username, deployconf.PasswordVar(transport.Role(u.Username)))
		}
		p := u.Permissions
		if p == nil || p.Publish == nil || p.Subscribe == nil {
			t.Errorf("user %s: no publish and subscribe permissions", u.Username)
			continue
		}
		if !slices.Equal(p.Publish.Allow, want.Publish.Allow) || !slices.Equal(p.Subscribe.Allow, want.Subscribe.Allow) ||
			(p.Response == nil) != (want.Response == nil) || p.Response != nil && *p.Response != *want.Response {
			t.Errorf("user %s: permissions\n  publish %v\n  subscribe %v\n  responses %v\nwant\n  publish %v\n  subscribe %v\n  responses %v",
				u.Username, p.Publish.Allow, p.Subscribe.Allow, p.Response, want.Publish.Allow, want.Subscribe.Allow, want.Response)
		}
	}
}

// Three servers started from the node configuration (moved to loopback
// ports and temporary storage, nothing else changed) form a cluster: the
// admin provisions the streams with three replicas, a worker publishes a
// verdict, and the worker's attempt to publish an event is refused.
func TestNATSClusterFromConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	ports := jstest.FreePorts(t, 6)
	var routes []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+i]))
	}
	var servers []*server.Server
	for i := range 3 {
		opts := natsNodeOptions(t, fmt.Sprintf("nats-%d", i+1))
		opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", ports[i], 0
		opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", ports[3+i]
		opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		opts.StoreDir = t.TempDir()
		opts.NoSigs = true
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatalf("nats-%d did not start", i+1)
		}
		servers = append(servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := transport.WaitForMetaLeader(ctx, servers...); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d,nats://127.0.0.1:%d,nats://127.0.0.1:%d", ports[0], ports[1], ports[2])
	connect := func(r transport.Role) (*nats.Conn, natsjs.JetStream) {
		nc, err := nats.Connect(url, nats.UserInfo(string(r), rolePassword(r)), nats.CustomInboxPrefix(transport.InboxPrefix(r)))
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		t.Cleanup(nc.Close)
		js, _ := natsjs.New(nc)
		return nc, js
	}
	_, admin := connect(transport.RoleAdmin)
	c := config.Default()
	sc := transport.StreamConfig{Prefix: c.NATS.Prefix, Partitions: c.NATS.Partitions, Duplicates: c.NATS.DuplicateWindow,
		VerdictDuplicates: c.NATS.VerdictWindow(), MaxAge: c.NATS.MaxAge, Replicas: 3}
	for {
		err := transport.Provision(ctx, admin, sc)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("provision with three replicas: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	info, err := admin.Stream(ctx, schema.StreamVerdicts)
	if err != nil {
		t.Fatal(err)
	}
	if r := info.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("VERDICTS has %d replicas, want 3", r)
	}
	wc, wjs := connect(transport.RoleWorker)
	sub := schema.Subjects{Prefix: c.NATS.Prefix, Partitions: c.NATS.Partitions}
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	if _, err := wjs.Publish(pctx, sub.Verdict(0, "run-1"), []byte(`{}`)); err != nil {
		t.Fatalf("a worker's verdict: %v", err)
	}
	errs := make(chan error, 1)
	wc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })
	if err := wc.Publish(sub.Event("run-1"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(err.Error(), "Permissions Violation") {
			t.Fatalf("a worker's event: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("a worker published an event and the server did not refuse it")
	}
}
