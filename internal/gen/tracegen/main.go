// Command tracegen writes a large, valid, deterministic event stream to
// standard output, for measuring `ponens check` (docs/performance.md):
//
//	go run ./internal/gen/tracegen -runs 1 -events 1000000 > /tmp/1m.jsonl
//
// With -reference it writes the same run (-runs 1) as a reference trace.
//
//	go run ./internal/gen/tracegen -reference -events 50000 > /tmp/50k.json
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/schema"
)

func main() {
	runs := flag.Int("runs", 1, "interleaved runs")
	events := flag.Int("events", 100000, "events in total")
	reference := flag.Bool("reference", false, "write one run as a reference trace (JSON) instead")
	flag.Parse()
	if *runs < 1 || *events < 2**runs {
		fmt.Fprintln(os.Stderr, "tracegen: -runs must be at least 1 and -events at least 2 per run")
		os.Exit(2)
	}
	if *reference {
		if err := writeReference(*events); err != nil {
			fmt.Fprintln(os.Stderr, "tracegen:", err)
			os.Exit(1)
		}
		return
	}
	if err := gen.WriteStream(os.Stdout, *runs, *events); err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
}

// writeReference writes the run WriteStream gives for one run of events
// events as a reference trace.
func writeReference(events int) error {
	var b bytes.Buffer
	if err := gen.WriteStream(&b, 1, events); err != nil {
		return err
	}
	evs, err := schema.DecodeJSONL("stream", &b, 0)
	if err != nil {
		return err
	}
	out, err := schema.EncodeReference(evs)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}
