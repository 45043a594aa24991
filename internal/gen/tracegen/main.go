// Command tracegen writes a large, valid, deterministic event stream to
// standard output, for measuring `ponens check` (docs/PERFORMANCE.md):
//
//	go run ./internal/gen/tracegen -runs 1 -events 1000000 > /tmp/1m.jsonl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ponens/ponens/internal/gen"
)

func main() {
	runs := flag.Int("runs", 1, "interleaved runs")
	events := flag.Int("events", 100000, "events in total")
	flag.Parse()
	if *runs < 1 || *events < 2**runs {
		fmt.Fprintln(os.Stderr, "tracegen: -runs must be at least 1 and -events at least 2 per run")
		os.Exit(2)
	}
	if err := gen.WriteStream(os.Stdout, *runs, *events); err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
}
