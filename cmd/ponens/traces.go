package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/schema"
)

// namedRun is one run read from a trace file, with the name it is reported
// under: the file's path, with #runId added when the file holds several runs.
type namedRun struct {
	Name string
	File string
	Run  schema.Run
}

// traceFiles drops the verdict streams from paths, with a note on notes for
// each: `check` writes <trace>.verdicts.jsonl beside the traces, so the next
// `ponens check traces/*.jsonl` would otherwise read them as traces.
func traceFiles(paths []string, notes io.Writer) []string {
	var out []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".verdicts.jsonl") {
			fmt.Fprintf(notes, "ponens: skipping %s: a verdict stream, not a trace\n", p)
			continue
		}
		out = append(out, p)
	}
	return out
}

// readTraces reads every trace file; the first unreadable one is an error
// naming the file, line and field.
func readTraces(paths []string, maxLine int) ([]namedRun, error) {
	var out []namedRun
	for _, p := range paths {
		runs, err := tracefile.Read(p, maxLine)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			name := filepath.ToSlash(p)
			if len(runs) > 1 {
				name += "#" + r.ID
			}
			out = append(out, namedRun{Name: name, File: p, Run: r})
		}
	}
	return out, nil
}
