package transport_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestSecureServerRefusesStrangers: a server with users and TLS with
// client certificates refuses a client without credentials, with another
// role's seed that the server does not know, without a client certificate
// and without the CA; the role's own credentials connect.
func TestSecureServerRefusesStrangers(t *testing.T) {
	s := jstest.StartSecure(t, testStreams.Subjects())
	url := s.Server.ClientURL()
	stranger := filepath.Join(t.TempDir(), "credentials")
	if _, _, err := transport.EnsureCredentials(stranger); err != nil {
		t.Fatal(err)
	}
	good := s.Auth(transport.RoleAgent)
	for _, c := range []struct {
		name string
		auth func(a transport.ClientAuth) transport.ClientAuth
		want string
	}{
		{"no credentials", func(a transport.ClientAuth) transport.ClientAuth { a.NkeySeedFile = ""; return a }, "authorization violation"},
		{"unknown nkey", func(a transport.ClientAuth) transport.ClientAuth {
			a.NkeySeedFile = transport.SeedFile(stranger, transport.RoleAdmin)
			return a
		}, "authorization violation"},
		{"no client certificate", func(a transport.ClientAuth) transport.ClientAuth { a.CertFile, a.KeyFile = "", ""; return a }, ""},
		{"no CA", func(a transport.ClientAuth) transport.ClientAuth { a.CAFile = ""; return a }, "certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, err := c.auth(good).Options()
			if err != nil {
				t.Fatal(err)
			}
			nc, err := nats.Connect(url, append(opts, nats.Timeout(5*time.Second))...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(strings.ToLower(err.Error()), c.want) {
				t.Fatalf("error %q lacks %q", err, c.want)
			}
		})
	}
	nc, _, _ := s.Connect(t, transport.RoleAgent)
	if !nc.IsConnected() || nc.TLSRequired() == false {
		t.Fatalf("the agent is not connected over TLS: %s", nc.Status())
	}
}

// TestPasswordUsers: a server whose users have passwords accepts the role
// with its password and refuses a wrong one.
func TestPasswordUsers(t *testing.T) {
	srv, err := transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: t.TempDir(),
		Users: []transport.User{{Role: transport.RoleAdmin, Password: "s3cret"}, {Role: transport.RoleAgent, Password: "agent-pw"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	connect := func(user, pw string) (*nats.Conn, error) {
		opts, err := transport.ClientAuth{Role: transport.Role(user), User: user, Password: pw}.Options()
		if err != nil {
			t.Fatal(err)
		}
		return nats.Connect(srv.ClientURL(), opts...)
	}
	if _, err := connect("admin", "wrong"); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("a wrong password: %v", err)
	}
	nc, err := connect("admin", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	provision(t, js, testStreams)
	ac, err := connect("agent", "agent-pw")
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	ajs, _ := natsjs.New(ac)
	if err := transport.Provision(ctxT(t), ajs, testStreams); err != nil {
		t.Fatalf("the agent looks the streams up: %v", err)
	}
}

// TestProvisionWithoutStreamRights: once an admin has made the streams,
// every role provisions them (a look-up) and starts; a configuration that
// would change them is refused to a role that may not manage streams, and
// the streams stay as they were.
func TestProvisionWithoutStreamRights(t *testing.T) {
	s := jstest.StartSecure(t, testStreams.Subjects())
	_, admin, _ := s.Connect(t, transport.RoleAdmin)
	provision(t, admin, testStreams)
	for _, r := range transport.Roles {
		nc, js, _ := s.Connect(t, r)
		if err := transport.Provision(ctxT(t), js, testStreams); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if r == transport.RoleAdmin {
			continue
		}
		changed := testStreams
		changed.MaxAge = time.Hour
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := transport.Provision(ctx, js, changed)
		cancel()
		if err == nil {
			t.Fatalf("%s changed the streams", r)
		}
		if refused := transport.Refusal(nc, err); refused == nil || !errors.Is(refused, nats.ErrPermissionViolation) {
			t.Fatalf("%s: %v is not a permission refusal", r, err)
		}
	}
	st, err := admin.Stream(ctxT(t), "EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if age := st.CachedInfo().Config.MaxAge; age != 0 {
		t.Fatalf("EVENTS max age %s after refused updates", age)
	}
}

// TestPublisherDenied: a publisher whose user may not publish events fails
// each event at once with a permission violation instead of retrying it
// for as long as its retries last; nothing is stored.
func TestPublisherDenied(t *testing.T) {
	s := jstest.StartSecure(t, testStreams.Subjects())
	_, admin, _ := s.Connect(t, transport.RoleAdmin)
	provision(t, admin, testStreams)
	_, js, _ := s.Connect(t, transport.RoleSink)
	pub := transport.NewPublisher(js, testStreams.Subjects(), transport.PublisherOptions{Timeout: 2 * time.Second, Retries: 5})
	errs := pub.PublishBatch(ctxT(t), []*schema.Event{event("r1", 1), event("r1", 2)})
	for i, err := range errs {
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if err := pub.Publish(ctxT(t), event("r1", 3)); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("a later event: %v", err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	if st := pub.Stats(); st.Retries != 0 || st.Stored != 0 {
		t.Fatalf("stats %+v: want no retry and nothing stored", st)
	}
	if n := streamMsgs(t, admin, "EVENTS"); n != 0 {
		t.Fatalf("%d events stored", n)
	}
	// The agent publishes.
	_, ajs, _ := s.Connect(t, transport.RoleAgent)
	apub := transport.NewPublisher(ajs, testStreams.Subjects(), transport.PublisherOptions{})
	for i, err := range apub.PublishBatch(ctxT(t), []*schema.Event{event("r1", 1)}) {
		if err != nil {
			t.Fatalf("agent event %d: %v", i, err)
		}
	}
	apub.Close()
}

// TestEnsureCredentials: seeds are generated once, mode 0600, and kept; a
// seed file others may read is refused.
func TestEnsureCredentials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "credentials")
	users, gen, err := transport.EnsureCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != len(transport.Roles) || len(gen) != len(transport.Roles) {
		t.Fatalf("users %v, generated %v", users, gen)
	}
	for _, r := range transport.Roles {
		st, err := os.Stat(transport.SeedFile(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %04o", r, st.Mode().Perm())
		}
	}
	again, gen, err := transport.EnsureCredentials(dir)
	if err != nil || len(gen) != 0 {
		t.Fatalf("second call: generated %v, %v", gen, err)
	}
	for i := range users {
		if users[i] != again[i] {
			t.Fatalf("%s: key changed from %s to %s", users[i].Role, users[i].Nkey, again[i].Nkey)
		}
	}
	if err := os.Chmod(transport.SeedFile(dir, transport.RoleAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := transport.EnsureCredentials(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a readable seed: %v", err)
	}
}

// TestCredsFile: a client authenticates with a creds file (a user JWT and
// its seed) to a server in operator mode (memory resolver), and the
// permissions in the JWT hold: the agent's user publishes events and may
// not publish verdicts.
func TestCredsFile(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	accJWT, err := jwt.NewAccountClaims(accPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(userPub)
	perms := transport.Permissions(transport.RoleAgent, testStreams.Subjects())
	uc.Pub.Allow.Add(perms.Publish.Allow...)
	uc.Sub.Allow.Add(perms.Subscribe.Allow...)
	userJWT, err := uc.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "agent.creds")
	if err := os.WriteFile(file, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	url := jstest.Plain(t, func(o *server.Options) {
		resolver := &server.MemAccResolver{}
		if err := resolver.Store(accPub, accJWT); err != nil {
			t.Fatal(err)
		}
		o.TrustedOperators, o.AccountResolver = []*jwt.OperatorClaims{opClaims}, resolver
	})
	if _, err := nats.Connect(url); err == nil {
		t.Fatal("connected without credentials")
	}
	opts, err := transport.ClientAuth{Role: transport.RoleAgent, CredsFile: file}.Options()
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	nc, err := nats.Connect(url, append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish(testStreams.Subjects().Event("r1"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("ponens.verdicts.3.victim", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `"ponens.verdicts.3.victim"`) {
			t.Fatalf("%v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the verdict was not refused")
	}
	if _, err := (transport.ClientAuth{CredsFile: "nope.creds"}).Options(); err == nil {
		t.Fatal("a missing creds file is accepted")
	}
}

// TestCheckRole: a connection with another role's seed for the agent role
// is told at once that the credentials are not the agent's; each role's
// own seed passes, and so does the admin's, which may use every inbox.
func TestCheckRole(t *testing.T) {
	s := jstest.StartSecure(t, testStreams.Subjects())
	connect := func(role, seedOf transport.Role) *nats.Conn {
		a := s.Auth(role)
		a.NkeySeedFile = transport.SeedFile(s.Credentials, seedOf)
		opts, err := a.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(s.Server.ClientURL(), append(opts, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	for _, r := range []transport.Role{transport.RoleAgent, transport.RoleWorker, transport.RoleSink, transport.RoleAlert, transport.RoleAdmin} {
		if err := transport.CheckRole(connect(r, r), r, 5*time.Second); err != nil {
			t.Errorf("%s with its own seed: %v", r, err)
		}
	}
	err := transport.CheckRole(connect(transport.RoleAgent, transport.RoleAlert), transport.RoleAgent, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "not the agent role's") || !strings.Contains(err.Error(), "_INBOX_agent.>") {
		t.Fatalf("the alert role's seed used as the agent's: %v", err)
	}
}
