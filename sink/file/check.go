package file

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/schema"
)

// SummaryFile is the name of the summary in the output directory.
const SummaryFile = "summary.json"

// Check builds the artifacts of one check: the rule manifest from the
// rules, then one trace at a time, the trace manifest, the matrix, the
// counts and the content hash (schema.SummaryFold). A Check is not safe
// for concurrent use.
type Check struct {
	outDir string
	fold   *schema.SummaryFold
}

// Trace is one checked run, as AddTrace records it.
type Trace struct {
	ID       string // unique within the check; see Layout
	RunID    string
	Verdicts string // the path its verdict stream is (or will be) written to
	// Events are the run's events in order; the closing event, if any,
	// gives the outcome.
	Events []schema.Event
	// Encoded, when Events is nil, yields the run's events as a
	// schema.EncodeEventLine lines, for a run read as a stream
	// whose events are not held; Count and Outcome then say how many
	// there were and how the run ended.
	Encoded io.Reader
	Count   int
	Outcome schema.Outcome
	// Stream is the run's verdict stream in the order the monitor emitted
	// it, as written to Verdicts.
	Stream []schema.VerdictEvent
	// Results are the monitor's final results (monitor.Run.Results), one
	// per rule in the order of the rules given to NewCheck.
	Results []monitor.Result
}

// RuleManifest is the summary's rule manifest of rules (as
// monitor.Engine.Rules lists them), in their order: what `ponens check`
// writes and the query service answers with.
func RuleManifest(rules []monitor.Rule) []schema.RuleManifestEntry {
	manifest := make([]schema.RuleManifestEntry, len(rules))
	for i, r := range rules {
		e := schema.RuleManifestEntry{ID: r.ID, Description: r.Description, Mode: r.Mode, Text: r.Text}
		if r.Formula != nil {
			e.Formula = ltl.ToJSON(r.Formula)
		}
		manifest[i] = e
	}
	return manifest
}

// NewCheck starts the artifacts of a check of rules (as
// monitor.Engine.Rules lists them) whose summary goes to outDir.
func NewCheck(rules []monitor.Rule, outDir string) (*Check, error) {
	fold, err := schema.NewSummaryFold(RuleManifest(rules))
	if err != nil {
		return nil, err
	}
	return &Check{outDir: outDir, fold: fold}, nil
}

// SummaryPath is where WriteSummary writes: SummaryFile in the output
// directory.
func (c *Check) SummaryPath() string { return filepath.Join(c.outDir, SummaryFile) }

// AddTrace adds t as the next trace of the summary. It refuses a trace
// whose id is taken, whose results do not match the rules, whose stream
// holds a verdict about another run or an unknown rule, or whose stream
// does not fold to the status the monitor reports for some rule; nothing
// is recorded then.
func (c *Check) AddTrace(t Trace) error {
	rules := c.fold.Rules()
	if len(t.Results) != len(rules) {
		return fmt.Errorf("trace %s: %d results for %d rules", t.ID, len(t.Results), len(rules))
	}
	if err := c.fold.CheckStream(t.ID, t.RunID, t.Stream); err != nil {
		return err
	}
	final := schema.Fold(t.Stream)
	results := make([]string, len(rules))
	for i, res := range t.Results {
		id := rules[i].ID
		if res.RuleID != id {
			return fmt.Errorf("trace %s: result %d is for rule %s, want %s", t.ID, i+1, res.RuleID, id)
		}
		if got := schema.FinalStatus(final, id); got != res.Status {
			return fmt.Errorf("trace %s: rule %s: the verdict stream ends %s but the monitor's final status is %s", t.ID, id, got, res.Status)
		}
		results[i] = string(res.Outcome)
	}
	rel, err := relPath(c.outDir, t.Verdicts)
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.ID, err)
	}
	entry := schema.TraceManifestEntry{ID: t.ID, RunID: t.RunID, Verdicts: rel}
	if t.Events == nil && t.Encoded != nil {
		entry.Events, entry.Outcome = t.Count, t.Outcome
		_, err = c.fold.AddEncoded(entry, t.Encoded, t.Stream, results)
		return err
	}
	_, err = c.fold.Add(entry, t.Events, t.Stream, results)
	return err
}

// relPath returns path relative to dir, slash-separated.
func relPath(dir, path string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	absPath, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, absPath)
	if err != nil {
		return "", fmt.Errorf("verdict stream %s: no path to it from %s: %w", path, dir, err)
	}
	return filepath.ToSlash(rel), nil
}

// Summary returns summary.json as it stands: every trace added so far.
func (c *Check) Summary() *schema.Summary { return c.fold.Summary() }

// WriteSummary writes Summary() to SummaryPath, creating the output
// directory if needed.
func (c *Check) WriteSummary() error {
	if err := os.MkdirAll(c.outDir, 0o755); err != nil {
		return err
	}
	return writeFile(c.SummaryPath(), func(w io.Writer) error { return EncodeSummary(w, c.Summary()) })
}

// EncodeSummary writes s as summary.json is written: indented by two
// spaces, with <, > and & left as they are, and a final newline.
func EncodeSummary(w io.Writer, s *schema.Summary) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteVerdicts writes a verdict stream to path: one JSON object per line,
// each stamped with formatVersion, in the order given.
func WriteVerdicts(path string, stream []schema.VerdictEvent) error {
	return writeFile(path, func(w io.Writer) error {
		for i := range stream {
			line, err := EncodeVerdict(&stream[i])
			if err != nil {
				return fmt.Errorf("verdict %d: %w", i+1, err)
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
}

// EncodeVerdict is a verdict's line of a verdict stream, newline included,
// as WriteVerdicts writes it.
func EncodeVerdict(v *schema.VerdictEvent) ([]byte, error) {
	line, err := json.Marshal(v)
	return append(line, '\n'), err
}

// WriteVerdictsFrom writes the verdict stream r yields, lines EncodeVerdict
// made, to path as WriteVerdicts does: whole or not at all.
func WriteVerdictsFrom(path string, r io.Reader) error {
	return writeFile(path, func(w io.Writer) error {
		_, err := io.Copy(w, r)
		return err
	})
}

// writeFile writes path whole or not at all: write produces the content
// into a temporary file beside path, which is then renamed over it. The
// file gets mode 0666 less the process's umask, as os.WriteFile gives;
// missing directories are made (0777 less the umask).
func writeFile(path string, write func(io.Writer) error) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := createTemp(path)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err = write(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// createTemp creates a new file beside path, named after it, with mode
// 0666 less the umask (os.CreateTemp would give 0600).
func createTemp(path string) (*os.File, error) {
	for {
		name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}
