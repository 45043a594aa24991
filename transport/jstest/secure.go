package jstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

// TLSFiles are PEM files made for a test: a CA, a server certificate for
// 127.0.0.1 and localhost, and a client certificate, both signed by the CA.
type TLSFiles struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewTLSFiles generates TLSFiles in a t.TempDir() with crypto/x509.
func NewTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	f := TLSFiles{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	caKey, caDER := certificate(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "ponens test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	for _, c := range []struct {
		cert, key string
		tmpl      *x509.Certificate
	}{
		{f.ServerCert, f.ServerKey, &x509.Certificate{Subject: pkix.Name{CommonName: "ponens test server"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}},
		{f.ClientCert, f.ClientKey, &x509.Certificate{Subject: pkix.Name{CommonName: "ponens test client"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}},
	} {
		key, der := certificate(t, c.tmpl, ca, caKey)
		writePEM(t, c.cert, "CERTIFICATE", der)
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, c.key, "EC PRIVATE KEY", kb)
	}
	return f
}

// certificate makes a key and a certificate of tmpl signed by parent's
// key (self-signed when parent is nil).
func certificate(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func writePEM(t testing.TB, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Secure is a running JetStream server that requires TLS with client
// certificates and accepts only the users of ponens's roles, by nkeys
// generated for the test, each with the permissions of its role.
type Secure struct {
	Server   *server.Server
	Subjects schema.Subjects
	TLS      TLSFiles
	// Credentials is the directory of the roles' nkey seeds (<role>.nk).
	Credentials string
}

// StartSecure starts a Secure server for subjects on a random loopback
// port. It is stopped when the test ends.
func StartSecure(t testing.TB, subjects schema.Subjects) *Secure {
	t.Helper()
	s := &Secure{Subjects: subjects, TLS: NewTLSFiles(t), Credentials: filepath.Join(t.TempDir(), "credentials")}
	users, _, err := transport.EnsureCredentials(s.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	s.Server, err = transport.StartEmbedded(transport.EmbeddedOptions{
		StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", Users: users, Subjects: subjects,
		TLS: &transport.ServerTLS{CertFile: s.TLS.ServerCert, KeyFile: s.TLS.ServerKey, CAFile: s.TLS.CA, ClientCerts: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Server.Shutdown()
		s.Server.WaitForShutdown()
	})
	return s
}

// Auth is how a client of role connects to s.
func (s *Secure) Auth(role transport.Role) transport.ClientAuth {
	return transport.ClientAuth{
		Role: role, NkeySeedFile: transport.SeedFile(s.Credentials, role),
		CAFile: s.TLS.CA, CertFile: s.TLS.ClientCert, KeyFile: s.TLS.ClientKey,
	}
}

// Connect connects to s as role and returns the connection, a JetStream
// context on it and the asynchronous errors the server sends it
// (permission violations), buffered. The connection is closed when the
// test ends.
func (s *Secure) Connect(t testing.TB, role transport.Role) (*nats.Conn, natsjs.JetStream, <-chan error) {
	t.Helper()
	opts, err := s.Auth(role).Options()
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 64)
	opts = append(opts, nats.Name(string(role)), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	nc, err := nats.Connect(s.Server.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, errs
}
