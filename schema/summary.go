package schema

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/ponens/ponens/internal/avxstate"
)

// Fold returns each rule's status at the end of a verdict stream: the
// status of its last verdict. A rule with no verdict is absent, and held
// throughout: FinalStatus reads it as satisfied.
func Fold(stream []VerdictEvent) map[string]VerdictStatus {
	final := make(map[string]VerdictStatus)
	for _, v := range stream {
		final[v.Rule.ID] = v.Status
	}
	return final
}

// FinalStatus is rule id's status in a fold: satisfied when the stream
// had no verdict about it.
func FinalStatus(final map[string]VerdictStatus, id string) VerdictStatus {
	if s, ok := final[id]; ok {
		return s
	}
	return StatusSatisfied
}

// RunOutcome is how a run ended, read from its closing event: completed
// for run.finish, errored for run.error, canceled for run.cancel or when
// there is no closing event.
func RunOutcome(events []Event) Outcome {
	for _, e := range events {
		switch e.Type {
		case TypeRunFinish:
			return OutcomeCompleted
		case TypeRunError:
			return OutcomeErrored
		case TypeRunCancel:
			return OutcomeCanceled
		}
	}
	return OutcomeCanceled
}

// SummaryFold makes a Summary from the rule manifest and, one trace at a
// time, the trace manifest entries, the traces' events and their verdict
// streams: each matrix cell is the fold of the trace's stream, the counts
// are over the cells, and the content hash is "sha256:" and the hex
// SHA-256 of, newline-separated, the JSON of the rule manifest array, then
// for each trace in order its id as a JSON string and each of its events
// as JSON. `ponens check` and the stored verdicts make summaries with it.
// A SummaryFold is not safe for concurrent use.
type SummaryFold struct {
	rules   []RuleManifestEntry
	index   map[string]int // rule id → position
	traces  []TraceManifestEntry
	ids     map[string]bool
	cells   [][]VerdictStatus // [rule][trace]
	results [][]string        // [rule][trace]
	sha     sha256Hash        // the content hash
	hash    hash.Hash         // sha, with the AVX state cleared before each write
}

// sha256Hash is what crypto/sha256's hash offers: a state that can be
// saved and restored.
type sha256Hash interface {
	hash.Hash
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// NewSummaryFold starts a summary of rules, whose ids must be distinct.
func NewSummaryFold(rules []RuleManifestEntry) (*SummaryFold, error) {
	sha := sha256.New().(sha256Hash)
	f := &SummaryFold{rules: slices.Clone(rules), index: make(map[string]int, len(rules)), ids: map[string]bool{}, sha: sha, hash: avxstate.Hash{Hash: sha}}
	for i, r := range rules {
		if _, dup := f.index[r.ID]; dup {
			return nil, fmt.Errorf("rule %s is listed twice", r.ID)
		}
		f.index[r.ID] = i
	}
	f.cells = make([][]VerdictStatus, len(rules))
	f.results = make([][]string, len(rules))
	manifest, err := json.Marshal(f.rules)
	if err != nil {
		return nil, fmt.Errorf("rule manifest: %w", err)
	}
	f.hash.Write(manifest)
	f.hash.Write([]byte("\n"))
	return f, nil
}

// Rules is the rule manifest of the summary.
func (f *SummaryFold) Rules() []RuleManifestEntry { return f.rules }

// Add adds the next trace: its manifest entry (Events and Outcome are
// taken from events), its events and its verdict stream; results, when not
// nil, are the rules' offline results (matrix.results) in rule order. It
// refuses a trace whose id is empty or taken, or whose stream holds a
// verdict about another run, an unknown rule or an unknown status, and an
// event it cannot encode; nothing is recorded then. It returns the trace's
// column of the matrix. The events are encoded with AppendEventLine (their
// raw members each hold one JSON value, as every decoder of this package
// gives), a stretch at a time on all cores, and hashed as they come: the
// encoding of the whole trace is never held.
func (f *SummaryFold) Add(t TraceManifestEntry, events []Event, stream []VerdictEvent, results []string) ([]VerdictStatus, error) {
	t.Events, t.Outcome = len(events), RunOutcome(events)
	return f.add(t, stream, results, func(w io.Writer) error {
		if err := writeEventLines(w, events); err != nil {
			return fmt.Errorf("trace %s: %w", t.ID, err)
		}
		return nil
	})
}

// EncodeEventLine is an event as the content hash takes it: its JSON and
// a newline. A trace read as a stream writes its events so as they come
// (to a spill file, say) and hands the bytes to AddEncoded when the trace
// is complete.
func EncodeEventLine(ev *Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	return append(b, '\n'), err
}

// AddEncoded is Add for a trace whose events are not held: t.Events and
// t.Outcome are given, and events yields the EncodeEventLine lines of
// the trace's events. It refuses what Add refuses, before reading events;
// after an error reading events nothing is recorded either.
func (f *SummaryFold) AddEncoded(t TraceManifestEntry, events io.Reader, stream []VerdictEvent, results []string) ([]VerdictStatus, error) {
	return f.add(t, stream, results, func(w io.Writer) error {
		if _, err := io.Copy(w, events); err != nil {
			return fmt.Errorf("trace %s: reading its events: %w", t.ID, err)
		}
		return nil
	})
}

// add is Add and AddEncoded: writeEvents writes the trace's event lines
// to the content hash. When it fails, the hash is put back as it was
// before the trace's id was written, and nothing is recorded.
func (f *SummaryFold) add(t TraceManifestEntry, stream []VerdictEvent, results []string, writeEvents func(io.Writer) error) ([]VerdictStatus, error) {
	if t.ID == "" || f.ids[t.ID] {
		return nil, fmt.Errorf("trace id %q is empty or already taken", t.ID)
	}
	if results != nil && len(results) != len(f.rules) {
		return nil, fmt.Errorf("trace %s: %d results for %d rules", t.ID, len(results), len(f.rules))
	}
	if err := f.CheckStream(t.ID, t.RunID, stream); err != nil {
		return nil, err
	}
	saved, err := f.sha.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("content hash: %w", err)
	}
	name, _ := json.Marshal(t.ID)
	f.hash.Write(name)
	f.hash.Write([]byte("\n"))
	if err := writeEvents(f.hash); err != nil {
		if rerr := f.sha.UnmarshalBinary(saved); rerr != nil {
			return nil, fmt.Errorf("%w (and the content hash could not be restored: %v)", err, rerr)
		}
		return nil, err
	}
	f.ids[t.ID] = true
	f.traces = append(f.traces, t)
	final := Fold(stream)
	col := make([]VerdictStatus, len(f.rules))
	for i, r := range f.rules {
		col[i] = FinalStatus(final, r.ID)
		f.cells[i] = append(f.cells[i], col[i])
		if results != nil {
			f.results[i] = append(f.results[i], results[i])
		}
	}
	return col, nil
}

// CheckStream refuses a verdict stream of trace id (of run runID) that
// holds a verdict about another run, a rule not in the summary or an
// unknown status.
func (f *SummaryFold) CheckStream(id, runID string, stream []VerdictEvent) error {
	for n, v := range stream {
		if v.RunID != runID {
			return fmt.Errorf("trace %s: verdict %d is about run %q, not %q", id, n+1, v.RunID, runID)
		}
		if _, ok := f.index[v.Rule.ID]; !ok {
			return fmt.Errorf("trace %s: verdict %d is about rule %q, which is not checked", id, n+1, v.Rule.ID)
		}
		if !slices.Contains(Statuses, v.Status) {
			return fmt.Errorf("trace %s: verdict %d has status %q", id, n+1, v.Status)
		}
	}
	return nil
}

// Summary returns the summary as it stands: every trace added so far.
// matrix.results is present when every trace was added with results.
func (f *SummaryFold) Summary() *Summary {
	s := &Summary{
		FormatVersion: FormatVersion,
		Rules:         slices.Clone(f.rules),
		Traces:        slices.Clone(f.traces),
		Matrix: Matrix{
			Rules:  make([]string, len(f.rules)),
			Traces: make([]string, len(f.traces)),
			Cells:  make([][]VerdictStatus, len(f.rules)),
		},
		Counts:      Counts{},
		ContentHash: "sha256:" + hex.EncodeToString(f.hash.Sum(nil)),
	}
	if s.Rules == nil {
		s.Rules = []RuleManifestEntry{}
	}
	if s.Traces == nil {
		s.Traces = []TraceManifestEntry{}
	}
	withResults := len(f.rules) > 0 && len(f.results[0]) == len(f.traces)
	if withResults {
		s.Matrix.Results = make([][]string, len(f.rules))
	}
	for _, st := range Statuses {
		s.Counts[st] = 0
	}
	for i, r := range f.rules {
		s.Matrix.Rules[i] = r.ID
		s.Matrix.Cells[i] = append([]VerdictStatus{}, f.cells[i]...)
		if withResults {
			s.Matrix.Results[i] = append([]string{}, f.results[i]...)
		}
		for _, st := range f.cells[i] {
			s.Counts[st]++
		}
	}
	for j, t := range f.traces {
		s.Matrix.Traces[j] = t.ID
	}
	return s
}

// RunTraceStream is the verdict stream path (relative to summary.json) of
// a trace named by its run id: verdicts/<name>.verdicts.jsonl, the name
// being the run id with every character outside [A-Za-z0-9._-] replaced
// by '_' (SafeName). The query service names the traces of its summaries
// so; `ponens check --verdicts-dir OUT/verdicts --out OUT` writes them so
// for trace files named by their run id.
func RunTraceStream(runID string) string {
	return "verdicts/" + SafeName(runID) + ".verdicts.jsonl"
}

// SafeName is s with every character outside [A-Za-z0-9._-] replaced by
// '_', "_" for the empty string: a file name made of a run id.
func SafeName(s string) string {
	if s == "" {
		return "_"
	}
	var b []byte
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= 0x80 {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
		i += n
	}
	return string(b)
}
