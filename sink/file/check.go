package file

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ltl"
	"github.com/ponens/ponens/schema"
)

// SummaryFile is the name of the summary in the output directory.
const SummaryFile = "summary.json"

// Check builds the artifacts of one check: the rule manifest from the
// rules, then one trace at a time, the trace manifest, the matrix, the
// counts and the content hash. A Check is not safe for concurrent use.
type Check struct {
	outDir  string
	rules   []schema.RuleManifestEntry
	index   map[string]int // rule id → position
	traces  []schema.TraceManifestEntry
	ids     map[string]bool
	cells   [][]schema.VerdictStatus // [rule][trace]
	results [][]string               // [rule][trace]
	hash    hash.Hash
}

// Trace is one checked run, as AddTrace records it.
type Trace struct {
	ID       string // unique within the check; see Layout
	RunID    string
	Verdicts string // the path its verdict stream is (or will be) written to
	// Events are the run's events in order; the closing event, if any,
	// gives the outcome.
	Events []schema.Event
	// Stream is the run's verdict stream in the order the monitor emitted
	// it, as written to Verdicts.
	Stream []schema.VerdictEvent
	// Results are the monitor's final results (monitor.Run.Results), one
	// per rule in the order of the rules given to NewCheck.
	Results []monitor.Result
}

// NewCheck starts the artifacts of a check of rules (as
// monitor.Engine.Rules lists them) whose summary goes to outDir.
func NewCheck(rules []monitor.Rule, outDir string) (*Check, error) {
	c := &Check{outDir: outDir, index: make(map[string]int, len(rules)), ids: map[string]bool{}, hash: sha256.New()}
	c.rules = make([]schema.RuleManifestEntry, len(rules))
	for i, r := range rules {
		if _, dup := c.index[r.ID]; dup {
			return nil, fmt.Errorf("rule %s is listed twice", r.ID)
		}
		c.index[r.ID] = i
		e := schema.RuleManifestEntry{ID: r.ID, Description: r.Description, Mode: r.Mode, Text: r.Text}
		if r.Formula != nil {
			e.Formula = ltl.ToJSON(r.Formula)
		}
		c.rules[i] = e
	}
	c.cells = make([][]schema.VerdictStatus, len(rules))
	c.results = make([][]string, len(rules))
	manifest, err := json.Marshal(c.rules)
	if err != nil {
		return nil, fmt.Errorf("rule manifest: %w", err)
	}
	c.hash.Write(manifest)
	c.hash.Write([]byte("\n"))
	return c, nil
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
	if t.ID == "" || c.ids[t.ID] {
		return fmt.Errorf("trace id %q is empty or already taken", t.ID)
	}
	if len(t.Results) != len(c.rules) {
		return fmt.Errorf("trace %s: %d results for %d rules", t.ID, len(t.Results), len(c.rules))
	}
	for n, v := range t.Stream {
		if v.RunID != t.RunID {
			return fmt.Errorf("trace %s: verdict %d is about run %q, not %q", t.ID, n+1, v.RunID, t.RunID)
		}
		if _, ok := c.index[v.Rule.ID]; !ok {
			return fmt.Errorf("trace %s: verdict %d is about rule %q, which is not checked", t.ID, n+1, v.Rule.ID)
		}
		if !slices.Contains(schema.Statuses, v.Status) {
			return fmt.Errorf("trace %s: verdict %d has status %q", t.ID, n+1, v.Status)
		}
	}
	final := Fold(t.Stream)
	for i, res := range t.Results {
		id := c.rules[i].ID
		if res.RuleID != id {
			return fmt.Errorf("trace %s: result %d is for rule %s, want %s", t.ID, i+1, res.RuleID, id)
		}
		if got := status(final, id); got != res.Status {
			return fmt.Errorf("trace %s: rule %s: the verdict stream ends %s but the monitor's final status is %s", t.ID, id, got, res.Status)
		}
	}
	rel, err := relPath(c.outDir, t.Verdicts)
	if err != nil {
		return fmt.Errorf("trace %s: %w", t.ID, err)
	}
	var buf bytes.Buffer
	name, _ := json.Marshal(t.ID)
	buf.Write(name)
	buf.WriteByte('\n')
	for i := range t.Events {
		ev, err := json.Marshal(&t.Events[i])
		if err != nil {
			return fmt.Errorf("trace %s: event %d: %w", t.ID, i+1, err)
		}
		buf.Write(ev)
		buf.WriteByte('\n')
	}

	c.hash.Write(buf.Bytes())
	c.ids[t.ID] = true
	c.traces = append(c.traces, schema.TraceManifestEntry{
		ID: t.ID, RunID: t.RunID, Events: len(t.Events), Outcome: Outcome(t.Events), Verdicts: rel,
	})
	for i, res := range t.Results {
		c.cells[i] = append(c.cells[i], res.Status)
		c.results[i] = append(c.results[i], string(res.Outcome))
	}
	return nil
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

// Fold returns each rule's status at the end of a verdict stream: the
// status of its last verdict. A rule with no verdict is absent, and held
// throughout: it is satisfied.
func Fold(stream []schema.VerdictEvent) map[string]schema.VerdictStatus {
	final := make(map[string]schema.VerdictStatus)
	for _, v := range stream {
		final[v.Rule.ID] = v.Status
	}
	return final
}

// status is rule id's status in a fold.
func status(final map[string]schema.VerdictStatus, id string) schema.VerdictStatus {
	if s, ok := final[id]; ok {
		return s
	}
	return schema.StatusSatisfied
}

// Outcome is how a run ended, read from its closing event: completed for
// run.finish, errored for run.error, canceled for run.cancel or when there
// is no closing event.
func Outcome(events []schema.Event) schema.Outcome {
	for _, e := range events {
		switch e.Type {
		case schema.TypeRunFinish:
			return schema.OutcomeCompleted
		case schema.TypeRunError:
			return schema.OutcomeErrored
		case schema.TypeRunCancel:
			return schema.OutcomeCanceled
		}
	}
	return schema.OutcomeCanceled
}

// Summary returns summary.json as it stands: every trace added so far.
func (c *Check) Summary() *schema.Summary {
	s := &schema.Summary{
		FormatVersion: schema.FormatVersion,
		Rules:         slices.Clone(c.rules),
		Traces:        slices.Clone(c.traces),
		Matrix: schema.Matrix{
			Rules:   make([]string, len(c.rules)),
			Traces:  make([]string, len(c.traces)),
			Cells:   make([][]schema.VerdictStatus, len(c.rules)),
			Results: make([][]string, len(c.rules)),
		},
		Counts:      schema.Counts{},
		ContentHash: "sha256:" + hex.EncodeToString(c.hash.Sum(nil)),
	}
	if s.Rules == nil {
		s.Rules = []schema.RuleManifestEntry{}
	}
	if s.Traces == nil {
		s.Traces = []schema.TraceManifestEntry{}
	}
	for _, st := range schema.Statuses {
		s.Counts[st] = 0
	}
	for i, r := range c.rules {
		s.Matrix.Rules[i] = r.ID
		s.Matrix.Cells[i] = append([]schema.VerdictStatus{}, c.cells[i]...)
		s.Matrix.Results[i] = append([]string{}, c.results[i]...)
		for _, st := range c.cells[i] {
			s.Counts[st]++
		}
	}
	for j, t := range c.traces {
		s.Matrix.Traces[j] = t.ID
	}
	return s
}

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
			line, err := json.Marshal(stream[i])
			if err != nil {
				return fmt.Errorf("verdict %d: %w", i+1, err)
			}
			line = append(line, '\n')
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
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
