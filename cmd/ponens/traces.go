package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/schema"
)

// namedRun is one run read from a trace file, with the name it is reported
// under: the file's path, with #runId added when the file holds several runs.
type namedRun struct {
	Name      string
	File      string
	Run       schema.Run
	Reference bool // read from a reference trace (not an event stream)
}

// traceFiles expands the trace arguments: a file is itself, a directory is
// every *.json and *.jsonl file under it (recursively, in lexical order).
// Verdict streams (*.verdicts.jsonl) and summary.json, which `check` writes
// beside the traces, are skipped: a file named on the command line with a
// note on notes, in a directory silently. A directory holding no trace file
// is an error, as is a path that does not exist.
func traceFiles(paths []string, notes io.Writer) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, exitWith(exitBadInput, "%s: %v", p, errors.Unwrap(err))
		}
		if !st.IsDir() {
			if isOutput(p) {
				fmt.Fprintf(notes, "ponens: skipping %s: a verdict stream or summary written by check, not a trace\n", p)
				continue
			}
			out = append(out, p)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := filepath.Ext(path)
			if !d.IsDir() && (ext == ".json" || ext == ".jsonl") && !isOutput(path) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, exitWith(exitBadInput, "%s: %v", p, err)
		}
		if len(out) == n {
			return nil, exitWith(exitBadInput, "%s: a directory without trace files (*.json, *.jsonl)", p)
		}
	}
	return out, nil
}

// isOutput reports whether path is a file `check` writes: a verdict stream
// or summary.json.
func isOutput(path string) bool {
	return strings.HasSuffix(path, ".verdicts.jsonl") || filepath.Base(path) == "summary.json"
}

// readTraces reads every trace file; the first unreadable one is an error
// naming the file, line and field. Values of a reference trace read
// leniently are warned about on notes, one line each, and the trace is read
// all the same. release ends the holds on the collector that reading
// reference traces leaves (tracefile.File.Release); the caller calls it
// when done with the runs.
func readTraces(paths []string, limits config.TraceConfig, notes io.Writer) (out []namedRun, release func(), err error) {
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, p := range paths {
		f, err := tracefile.ReadFile(p, tracefile.Limits{MaxLine: limits.MaxEventBytes, MaxFileBytes: limits.MaxFileBytes, MaxReferenceBytes: limits.MaxReferenceBytes})
		if err != nil {
			release()
			return nil, nil, err
		}
		releases = append(releases, f.Release)
		for _, w := range f.Warnings {
			fmt.Fprintf(notes, "warning: %v\n", w)
		}
		for _, r := range f.Runs {
			name := filepath.ToSlash(p)
			if len(f.Runs) > 1 {
				name += "#" + r.ID
			}
			out = append(out, namedRun{Name: name, File: p, Run: r, Reference: f.Reference})
		}
	}
	return out, release, nil
}

// impliedEnd reports whether the run ends by the run.finish a reference
// trace without an outcome gets: it is a finished record, so it ends as
// completed.
func impliedEnd(r schema.Run) bool {
	if len(r.Events) == 0 {
		return false
	}
	last := r.Events[len(r.Events)-1]
	return last.End != nil && last.End.Implied
}
