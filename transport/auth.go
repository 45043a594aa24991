package transport

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/ponens/ponens/schema"
)

// Role is what a NATS user of ponens may do: each part of the pipeline
// connects as one role, and the server's permissions (Permissions) let it
// publish and subscribe only where that part must.
type Role string

// The roles. Their permissions are in the package documentation.
const (
	RoleAgent   Role = "agent"   // publishes events and dead letters, asks for decisions
	RoleGateway Role = "gateway" // the HTTP ingest gateway: publishes events and dead letters
	RoleWorker  Role = "worker"  // consumes events; publishes verdicts and dead letters; answers decisions
	RoleAlert   Role = "alert"   // the alert stage: reads verdicts, publishes alerts
	RoleSink    Role = "sink"    // reads verdicts, events, alerts, dead letters and the rule manifest
	RoleAdmin   Role = "admin"   // everything, and the only role that manages the streams
)

// Roles lists every role, in the order the documentation gives them.
var Roles = []Role{RoleAgent, RoleGateway, RoleWorker, RoleAlert, RoleSink, RoleAdmin}

// ParseRole returns the role named s, or an error listing the roles.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	names := make([]string, len(Roles))
	for i, r := range Roles {
		names[i] = string(r)
	}
	return "", fmt.Errorf("unknown role %q: expected one of %s", s, strings.Join(names, ", "))
}

// InboxPrefix is the prefix of the reply subjects of a connection in role
// r: "_INBOX_<role>". Every role but admin may subscribe only to its own
// inbox prefix, so that no client sees the replies meant for another role
// (decisions, JetStream API answers).
func InboxPrefix(r Role) string { return "_INBOX_" + string(r) }

// The buckets of the monitor workers, under the subject prefix.
var workerBuckets = []string{schema.BucketWorkers, schema.BucketLeases, schema.BucketCheckpoints, schema.BucketRules}

// jsAPI is the JetStream API subject prefix.
const jsAPI = "$JS.API."

// readStream is what reading a stream through a durable or ephemeral
// consumer takes: looking the stream up, making, reading, acknowledging
// and deleting its consumers, and direct gets.
func readStream(stream string) []string {
	return []string{
		jsAPI + "STREAM.INFO." + stream,
		jsAPI + "STREAM.MSG.GET." + stream,
		jsAPI + "DIRECT.GET." + stream, jsAPI + "DIRECT.GET." + stream + ".>",
		jsAPI + "CONSUMER.CREATE." + stream, jsAPI + "CONSUMER.CREATE." + stream + ".>",
		jsAPI + "CONSUMER.DURABLE.CREATE." + stream + ".>",
		jsAPI + "CONSUMER.INFO." + stream + ".>",
		jsAPI + "CONSUMER.DELETE." + stream + ".>",
		jsAPI + "CONSUMER.MSG.NEXT." + stream + ".>",
		jsAPI + "CONSUMER.NAMES." + stream, jsAPI + "CONSUMER.LIST." + stream,
		"$JS.ACK." + stream + ".>",
		"$JS.FC." + stream + ".>",
	}
}

// readBack is what a publisher of events takes to compare a duplicate's
// content with the stored message it duplicates: reading an event of
// EVENTS by its stream sequence.
const readBack = jsAPI + "STREAM.MSG.GET." + schema.StreamEvents

// lookUpStreams is what Provision takes when the streams exist as
// configured: looking them up.
func lookUpStreams() []string {
	return []string{
		jsAPI + "INFO",
		jsAPI + "STREAM.INFO." + schema.StreamEvents,
		jsAPI + "STREAM.INFO." + schema.StreamVerdicts,
		jsAPI + "STREAM.INFO." + schema.StreamDeadLetter,
	}
}

// Permissions returns what role r may publish and subscribe to on a server
// whose subjects are s. Admin may do everything; every other role gets an
// allow list, so that anything it does not name is denied:
//
//	agent    publish <prefix>.events.*, <prefix>.dlq.>, requests on <prefix>.decide.*;
//	         read a stored event back by sequence (duplicate check)
//	gateway  publish <prefix>.events.*, <prefix>.dlq.>; read a stored event
//	         back by sequence (duplicate check)
//	worker   consume EVENTS; publish <prefix>.verdicts.>, <prefix>.dlq.>;
//	         subscribe <prefix>.decide.* and answer each request once;
//	         make and use its key-value buckets (<prefix>_workers, _leases,
//	         _checkpoints, _rules)
//	alert    consume VERDICTS; publish <prefix>.alerts.>, <prefix>.notify.>
//	         (subscriptions' subjects); make and use the <prefix>_alerts
//	         bucket (subscriptions, silences, delivery state)
//	sink     consume VERDICTS and DEADLETTER; subscribe <prefix>.verdicts.>,
//	         <prefix>.alerts.>; read the <prefix>_rules bucket
//	admin    everything: the only role that may create, update, delete or
//	         purge a stream other than the worker buckets
//
// Every role but admin looks the three streams up (so that it starts when
// they exist as configured) and subscribes only to its own inbox prefix
// (InboxPrefix). Only the worker may answer a request (decisions), and
// only once per request it received, within a minute.
func Permissions(r Role, s schema.Subjects) *server.Permissions {
	if r == RoleAdmin {
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{">"}},
			Subscribe: &server.SubjectPermission{Allow: []string{">"}},
		}
	}
	pub := lookUpStreams()
	sub := []string{InboxPrefix(r) + ".>"}
	p := s.Prefix
	var resp *server.ResponsePermission
	switch r {
	case RoleAgent:
		pub = append(pub, s.EventsIn(), s.DeadLettersIn(), p+".decide.*", readBack)
	case RoleGateway:
		pub = append(pub, s.EventsIn(), s.DeadLettersIn(), readBack)
	case RoleWorker:
		pub = append(pub, s.VerdictsIn(), s.DeadLettersIn())
		pub = append(pub, readStream(schema.StreamEvents)...)
		for _, b := range workerBuckets {
			kv := "KV_" + s.Bucket(b)
			pub = append(pub, readStream(kv)...)
			pub = append(pub, jsAPI+"STREAM.CREATE."+kv, jsAPI+"STREAM.UPDATE."+kv, "$KV."+s.Bucket(b)+".>")
		}
		sub = append(sub, p+".decide.*")
		resp = &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	case RoleAlert:
		pub = append(pub, s.Prefix+".alerts.>", s.Prefix+".notify.>")
		pub = append(pub, readStream(schema.StreamVerdicts)...)
		kv := "KV_" + s.Bucket(schema.BucketAlerts)
		pub = append(pub, readStream(kv)...)
		pub = append(pub, jsAPI+"STREAM.CREATE."+kv, jsAPI+"STREAM.UPDATE."+kv, "$KV."+s.Bucket(schema.BucketAlerts)+".>")
	case RoleSink:
		pub = append(pub, readStream(schema.StreamVerdicts)...)
		pub = append(pub, readStream(schema.StreamEvents)...) // the store keeps the events too
		pub = append(pub, readStream(schema.StreamDeadLetter)...)
		pub = append(pub, readStream("KV_"+s.Bucket(schema.BucketRules))...)
		sub = append(sub, s.VerdictsIn(), p+".alerts.>")
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: sub},
		Response:  resp,
	}
}

// User is a user of the embedded server: a role and how it proves it,
// with a password (its user name is the role's name) or an nkey (the
// public key; the client holds the seed).
type User struct {
	Role     Role
	Password string
	Nkey     string
}

// ServerTLS makes the embedded server require TLS.
type ServerTLS struct {
	// CertFile and KeyFile are the server's certificate and key (PEM).
	CertFile, KeyFile string
	// CAFile is the CA (PEM) the server checks client certificates with.
	CAFile string
	// ClientCerts requires every client to present a certificate that
	// CAFile verifies.
	ClientCerts bool
}

// serverAuth sets the users, their permissions and TLS of so.
func serverAuth(so *server.Options, users []User, subjects schema.Subjects, t *ServerTLS) error {
	for _, u := range users {
		if _, err := ParseRole(string(u.Role)); err != nil {
			return err
		}
		perms := Permissions(u.Role, subjects)
		switch {
		case u.Nkey != "" && u.Password != "":
			return fmt.Errorf("user %s: give a password or an nkey, not both", u.Role)
		case u.Nkey != "":
			if !nkeys.IsValidPublicUserKey(u.Nkey) {
				return fmt.Errorf("user %s: nkey %q is not a user public key (it starts with U)", u.Role, u.Nkey)
			}
			so.Nkeys = append(so.Nkeys, &server.NkeyUser{Nkey: u.Nkey, Permissions: perms})
		case u.Password != "":
			so.Users = append(so.Users, &server.User{Username: string(u.Role), Password: u.Password, Permissions: perms})
		default:
			return fmt.Errorf("user %s: a password or an nkey is required", u.Role)
		}
	}
	if t == nil {
		return nil
	}
	if t.CertFile == "" || t.KeyFile == "" {
		return errors.New("tls: a certificate and a key file are required")
	}
	if t.ClientCerts && t.CAFile == "" {
		return errors.New("tls: client certificates need a CA file to check them with")
	}
	for _, f := range []string{t.CertFile, t.KeyFile, t.CAFile} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
	}
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.CertFile, KeyFile: t.KeyFile, CaFile: t.CAFile, Verify: t.ClientCerts})
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	so.TLS, so.TLSConfig, so.TLSVerify, so.TLSTimeout = true, tc, t.ClientCerts, 5
	return nil
}
