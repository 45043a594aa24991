package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/transport"
)

// clientAuth is how a command connecting in role authenticates: the
// credentials of the configuration (nats.user and nats.password,
// nats.nkey_seed_file or nats.creds_file) when one is set, otherwise the
// role's nkey seed that `ponens serve` generated under nats.store_dir when
// it is there, otherwise none; and the TLS of nats.tls.
//
// The role chooses the inbox prefix: nats.role when set, else the user's
// name when it is a role's, else the command's role.
func clientAuth(c config.NATSConfig, role transport.Role) transport.ClientAuth {
	if r, err := transport.ParseRole(c.User); err == nil {
		role = r
	}
	if c.Role != "" {
		role = transport.Role(c.Role)
	}
	a := transport.ClientAuth{
		Role: role, User: c.User, Password: c.Password, NkeySeedFile: c.NkeySeedFile, CredsFile: c.CredsFile,
		CAFile: c.TLS.CAFile, CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile,
	}
	if a.User == "" && a.NkeySeedFile == "" && a.CredsFile == "" && c.StoreDir != "" {
		seed := transport.SeedFile(transport.CredentialsDir(filepath.Clean(c.StoreDir)), role)
		if _, err := os.Stat(seed); err == nil {
			a.NkeySeedFile = seed
		}
	}
	return a
}

// natsOptions are the options of every NATS connection a command makes:
// its name (the command and the role), clientAuth for role, and reconnecting without limit. Its error
// is an exit error (2: the credentials or TLS files cannot be used).
func natsOptions(c config.NATSConfig, role transport.Role, name string) ([]nats.Option, error) {
	auth, err := clientAuth(c, role).Options()
	if err != nil {
		return nil, exitWith(exitBadInput, "%s: nats credentials: %v", name, err)
	}
	opts := []nats.Option{nats.Name(fmt.Sprintf("%s (%s)", name, role)), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(asyncErrors(name))}
	return append(opts, auth...), nil
}

// asyncErrors prints each distinct error the server reports on a
// connection of the command name (a permission violation, a slow
// consumer) once on stderr, prefixed with the command.
func asyncErrors(name string) nats.ErrHandler {
	var seen sync.Map
	return func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if _, dup := seen.LoadOrStore(err.Error(), true); !dup {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		}
	}
}

// connectNATS connects to the configured server in role; with wait, it
// connects in the background while the server is not reachable yet (as
// after a disconnection). Its errors are exit errors (3: unreachable; 2:
// credentials made for another role than the one it connects in).
func connectNATS(c config.NATSConfig, role transport.Role, name string, wait bool) (*nats.Conn, error) {
	opts, err := natsOptions(c, role, name)
	if err != nil {
		return nil, err
	}
	if wait {
		opts = append(opts, nats.RetryOnFailedConnect(true))
	}
	url := natsURL(c)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, exitWith(exitUnavailable, "%s: connect to %s as %s: %v", name, url, role, err)
	}
	as := clientAuth(c, role).Role
	if err := transport.CheckRole(nc, as, transport.DefaultTimeout); err != nil {
		nc.Close()
		return nil, exitWith(exitBadInput, "%s: connect to %s as %s: %v", name, url, as, err)
	}
	return nc, nil
}

// embeddedAuth is who the embedded server of `ponens serve` accepts: the
// users of nats.server.users, or, when none is configured, a generated
// nkey per role under <store_dir>/credentials (kept across restarts), which
// it reports on out. The server's TLS is nats.server.tls.
func embeddedAuth(c config.NATSConfig, out func(format string, args ...any)) ([]transport.User, *transport.ServerTLS, error) {
	var tls *transport.ServerTLS
	if t := c.Server.TLS; t.CertFile != "" {
		tls = &transport.ServerTLS{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile, ClientCerts: t.ClientCerts}
	}
	var users []transport.User
	for _, u := range c.Server.Users.ByRole() {
		users = append(users, transport.User{Role: transport.Role(u.Role), Password: u.User.Password, Nkey: u.User.Nkey})
	}
	if len(users) > 0 {
		out("auth      %d configured user(s) (nats.server.users), each limited to its role", len(users))
		return users, tls, nil
	}
	dir := transport.CredentialsDir(filepath.Clean(c.StoreDir))
	users, generated, err := transport.EnsureCredentials(dir)
	if err != nil {
		return nil, nil, err
	}
	what := "using the"
	if len(generated) > 0 {
		what = fmt.Sprintf("generated %d of the", len(generated))
	}
	out("auth      %s per-role nkey seeds in %s (<role>.nk); other commands with this nats.store_dir use them", what, dir)
	return users, tls, nil
}
