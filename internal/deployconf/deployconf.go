// Package deployconf holds what the deploy files and their generators share:
// the names of the generated files and the environment variables that
// carry the NATS users' passwords.
//
// Decisions:
//   - A NATS server's password for role R is the environment variable of
//     ponens's own key for it, nats.server.users.R.password
//     (PONENS_NATS_SERVER_USERS_R_PASSWORD): one name for a secret wherever
//     it is set, and the deploy tests check every PONENS_* name against the
//     configuration keys.
package deployconf

import (
	"strings"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

// NATSAuthFile is the generated authorization file of the NATS cluster,
// relative to the repository's root.
const NATSAuthFile = "deploy/nats/auth.conf"

// PasswordVar is the environment variable holding role r's password on a
// NATS server.
func PasswordVar(r transport.Role) string {
	return config.EnvPrefix + "_NATS_SERVER_USERS_" + strings.ToUpper(string(r)) + "_PASSWORD"
}

// NATSAuth is the text of NATSAuthFile for subjects under prefix.
func NATSAuth(prefix string, partitions int) string {
	return transport.ServerAuthConf(schema.Subjects{Prefix: prefix, Partitions: partitions}, PasswordVar)
}
