package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/nats-io/nuid"
)

// ClientAuth is how a client proves who it is to the NATS server, and how
// it checks the server's certificate. At most one of a user and password,
// an nkey seed file and a creds file is given; none connects without
// credentials.
type ClientAuth struct {
	// Role is the role the client connects as; it chooses the inbox
	// prefix (InboxPrefix). Empty keeps the client library's _INBOX.
	Role Role
	// User and Password authenticate with a password.
	User, Password string
	// NkeySeedFile holds the nkey seed of the user (as `nk -gen user`
	// or ponens serve writes it).
	NkeySeedFile string
	// CredsFile is a NATS creds file (a user JWT and its seed), for a
	// server in operator mode.
	CredsFile string
	// CAFile is the CA (PEM) the server's certificate is checked with;
	// empty uses the system's roots when the server requires TLS.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key (PEM), for
	// a server that requires client certificates.
	CertFile, KeyFile string
}

// Options returns the nats.Options that authenticate and secure a
// connection as a says, or an error naming the file that cannot be used.
func (a ClientAuth) Options() ([]nats.Option, error) {
	var opts []nats.Option
	given := 0
	for _, s := range []string{a.User + a.Password, a.NkeySeedFile, a.CredsFile} {
		if s != "" {
			given++
		}
	}
	if given > 1 {
		return nil, errors.New("give one of a user and password, an nkey seed file and a creds file, not several")
	}
	if a.Role != "" {
		opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(a.Role)))
	}
	switch {
	case a.User != "" || a.Password != "":
		if a.User == "" || a.Password == "" {
			return nil, errors.New("a password needs a user, and a user a password")
		}
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.NkeySeedFile != "":
		if _, err := readSeed(a.NkeySeedFile); err != nil {
			return nil, err
		}
		o, err := nats.NkeyOptionFromSeed(a.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.NkeySeedFile, err)
		}
		opts = append(opts, o)
	case a.CredsFile != "":
		if _, err := os.Stat(a.CredsFile); err != nil {
			return nil, fmt.Errorf("creds file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	}
	if a.CAFile != "" {
		if _, err := os.Stat(a.CAFile); err != nil {
			return nil, fmt.Errorf("tls CA file: %w", err)
		}
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	if (a.CertFile == "") != (a.KeyFile == "") {
		return nil, errors.New("a client certificate needs its key file, and a key file its certificate")
	}
	if a.CertFile != "" {
		for _, f := range []string{a.CertFile, a.KeyFile} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("tls: %w", err)
			}
		}
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	}
	return opts, nil
}

// CredentialsDir is where ponens serve keeps the nkey seeds it generates
// for its embedded server whose store directory is storeDir.
func CredentialsDir(storeDir string) string { return filepath.Join(storeDir, "credentials") }

// SeedFile is the file in dir holding role r's nkey seed.
func SeedFile(dir string, r Role) string { return filepath.Join(dir, string(r)+".nk") }

// EnsureCredentials makes sure dir holds an nkey seed for every role
// (<role>.nk, mode 0600, in a directory of mode 0700), generating the
// missing ones, and returns the embedded server's users for them and the
// roles it generated seeds for. A seed file others may read is refused.
func EnsureCredentials(dir string) (users []User, generated []Role, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("credentials: %w", err)
	}
	for _, r := range Roles {
		file := SeedFile(dir, r)
		seed, err := readSeed(file)
		if errors.Is(err, fs.ErrNotExist) {
			seed, err = writeSeed(file)
			generated = append(generated, r)
		}
		if err != nil {
			return nil, nil, err
		}
		kp, err := nkeys.FromSeed(seed)
		if err != nil {
			return nil, nil, fmt.Errorf("credentials: %s: %w", file, err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, nil, fmt.Errorf("credentials: %s: %w", file, err)
		}
		users = append(users, User{Role: r, Nkey: pub})
	}
	return users, generated, nil
}

// readSeed reads a user nkey seed file and refuses one that others may
// read.
func readSeed(file string) ([]byte, error) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("nkey seed file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("nkey seed file %s: mode %04o lets others read it: expected 0600 (chmod 600 %s)", file, st.Mode().Perm(), file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("nkey seed file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); bytes.HasPrefix(line, []byte("SU")) {
			return line, nil
		}
	}
	return nil, fmt.Errorf("nkey seed file %s: no user seed (a line starting with SU)", file)
}

// writeSeed writes a new user nkey seed to file, which must not exist.
func writeSeed(file string) ([]byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	_, err = f.Write(append(seed, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: %s: %w", file, err)
	}
	return seed, nil
}

// CheckRole asks the server whether nc may receive replies in role r: a
// connection whose credentials were made for another role is refused its
// reply subjects (InboxPrefix), so every request it makes would wait for
// its timeout. The check subscribes to one reply subject and waits for the
// server's answer; the error names the role and the refused subjects. A
// connection that is not connected yet is not checked.
func CheckRole(nc *nats.Conn, r Role, timeout time.Duration) error {
	if r == "" || !nc.IsConnected() {
		return nil
	}
	subject := InboxPrefix(r) + ".check." + nuid.Next()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.FlushTimeout(timeout); err != nil {
		return nil // not answered in time: the requests themselves will say so
	}
	if last := nc.LastError(); errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), InboxPrefix(r)) {
		return fmt.Errorf("these credentials are not the %s role's: the server refuses it the role's reply subjects %s.> (give nats.role the role the credentials were made for, or the %s role's credentials)", r, InboxPrefix(r), r)
	}
	return nil
}
