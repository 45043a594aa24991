// Command clusterddl writes the storage schema for a ClickHouse cluster
// (Replicated tables behind Distributed tables, every statement ON
// CLUSTER), generated from schema/sql/*.sql by schema.ClusterDDL, into
// deploy/clickhouse/cluster/schema.sql. Run it from the repository's root
// after changing a migration; a test fails while the file is out of date:
//
//	go run ./internal/gen/clusterddl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ponens/ponens/schema"
)

func main() {
	cluster := flag.String("cluster", "ponens", "the cluster's name in the servers' remote_servers")
	out := flag.String("out", schema.ClusterSQLFile, "the `FILE` to write")
	flag.Parse()
	data, err := schema.ClusterSQL(*cluster)
	if err != nil {
		fmt.Fprintln(os.Stderr, "clusterddl:", err)
		os.Exit(2)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "clusterddl:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s\n", *out)
}
