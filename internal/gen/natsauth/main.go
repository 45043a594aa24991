// Command natsauth writes deploy/nats/auth.conf, the users and role
// permissions of a NATS server run on its own (the deploy files' cluster),
// from the permissions the embedded server gives each role
// (transport.ServerAuthConf). Run it from the repository's root after
// changing a role's permissions; a test fails while the file is out of date:
//
//	go run ./internal/gen/natsauth
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/deployconf"
)

func main() {
	out := flag.String("out", deployconf.NATSAuthFile, "the `FILE` to write")
	flag.Parse()
	c := config.Default()
	if err := os.WriteFile(*out, []byte(deployconf.NATSAuth(c.NATS.Prefix, c.NATS.Partitions)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "natsauth:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", *out)
}
