package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// FormatVersion is the version stamped on both verdict artifacts (seed 001):
// the verdict streams and summary.json.
const FormatVersion = 1

// VerdictStatus is a rule's status at a point of a run (seed 001).
type VerdictStatus string

// The verdict statuses. A rule starts satisfied; violated is final; pending
// means an obligation is open; unresolved appears only after a run that
// ended without run.finish.
const (
	StatusSatisfied  VerdictStatus = "satisfied"
	StatusViolated   VerdictStatus = "violated"
	StatusPending    VerdictStatus = "pending"
	StatusUnresolved VerdictStatus = "unresolved"
)

// Statuses lists the verdict statuses in the order above.
var Statuses = []VerdictStatus{StatusSatisfied, StatusViolated, StatusPending, StatusUnresolved}

// Leaning is which way a pending obligation would fall if the run ended now.
type Leaning string

// The leanings.
const (
	LeaningSatisfy Leaning = "satisfy"
	LeaningViolate Leaning = "violate"
)

// Mode is what the engine does when a rule is violated.
type Mode string

// The modes: record only, block the violating step, pause the run for
// approval, end the run.
const (
	ModeObserve Mode = "observe"
	ModeDeny    Mode = "deny"
	ModeSuspend Mode = "suspend"
	ModeAbort   Mode = "abort"
)

// Outcome is how a run ended, as a trace manifest reports it: read from the
// closing event, with no run.finish counting as canceled.
type Outcome string

// The outcomes.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomeErrored   Outcome = "errored"
	OutcomeCanceled  Outcome = "canceled"
)

// RuleRef identifies the rule a verdict is about.
type RuleRef struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// Cause is the event that made a rule fail and the part of the rule it
// failed; Subformula is a substring of the rule's printed form.
type Cause struct {
	Event      Event  `json:"event"`
	Subformula string `json:"subformula"`
}

// VerdictEvent is one line of a <trace>.verdicts.jsonl stream: a transition
// of one rule's status (seed 001). Its JSON form also carries
// "formatVersion": FormatVersion, first.
type VerdictEvent struct {
	RunID   string        `json:"runId"`
	Seq     uint64        `json:"seq"`
	Rule    RuleRef       `json:"rule"`
	Status  VerdictStatus `json:"status"`
	Leaning Leaning       `json:"leaning,omitempty"`
	Cause   *Cause        `json:"cause,omitempty"`
	Mode    Mode          `json:"mode"`
}

// plainVerdict is VerdictEvent without its MarshalJSON method.
type plainVerdict VerdictEvent

// MarshalJSON writes the verdict stamped with FormatVersion.
// Like summary.json, it does not escape <, > and & (formulas contain them).
func (v VerdictEvent) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		FormatVersion int `json:"formatVersion"`
		plainVerdict
	}{FormatVersion, plainVerdict(v)})
	return bytes.TrimRight(b.Bytes(), "\n"), err
}

// Summary is summary.json: the rule and trace manifests of a check, the
// rule × trace matrix of terminal statuses and their counts (seed 001).
type Summary struct {
	FormatVersion int                  `json:"formatVersion"`
	Rules         []RuleManifestEntry  `json:"rules"`
	Traces        []TraceManifestEntry `json:"traces"`
	Matrix        Matrix               `json:"matrix"`
	Counts        Counts               `json:"counts"`
	// ContentHash is "sha256:" and the hash over the rule manifest and
	// every trace.
	ContentHash string `json:"contentHash"`
}

// RuleManifestEntry describes one rule of a check. Text is its printed
// form; Formula its serialized form, absent for rules written as code.
type RuleManifestEntry struct {
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Mode        Mode            `json:"mode"`
	Text        string          `json:"text"`
	Formula     json.RawMessage `json:"formula,omitempty"`
}

// TraceManifestEntry describes one trace of a check. ID is unique within
// the summary; Verdicts is the path of its verdict stream relative to
// summary.json.
type TraceManifestEntry struct {
	ID       string  `json:"id"`
	RunID    string  `json:"runId"`
	Events   int     `json:"events"`
	Outcome  Outcome `json:"outcome"`
	Verdicts string  `json:"verdicts"`
}

// Matrix holds each rule's terminal status for each trace:
// Cells[rule][trace], with Rules and Traces (ids) giving the axes.
type Matrix struct {
	Rules  []string          `json:"rules"`
	Traces []string          `json:"traces"`
	Cells  [][]VerdictStatus `json:"cells"`
	// Results has the shape of Cells and holds each rule's offline result
	// for each trace by finite-trace semantics (SEMANTICS.md §4): "pass",
	// "fail" or "not_applicable" (a G(φ → ψ) rule whose φ never held). It
	// is where not_applicable is reported; added within formatVersion 1, so
	// readers must not require it.
	Results [][]string `json:"results,omitempty"`
}

// Counts counts the matrix cells by status. Its JSON form has exactly the
// four statuses, zero or not.
type Counts map[VerdictStatus]int

// MarshalJSON writes the count of each of the four statuses.
func (c Counts) MarshalJSON() ([]byte, error) {
	all := make(map[VerdictStatus]int, len(Statuses))
	for _, s := range Statuses {
		all[s] = c[s]
	}
	return json.Marshal(all)
}

// DecodeSummary decodes summary.json. It refuses a formatVersion other than
// FormatVersion, a matrix whose shape does not match its axes and unknown
// statuses; it ignores members it does not know, which later builds may add
// within the version.
func DecodeSummary(data []byte) (*Summary, error) {
	const file = "summary.json"
	var s Summary
	if err := unmarshalArtifact(file, 0, data, &s); err != nil {
		return nil, err
	}
	if len(s.Matrix.Cells) != len(s.Matrix.Rules) {
		return nil, newDecodeError(file, 0, 0, &FieldError{Field: "matrix.cells", Err: ErrInvalidValue,
			Expected: fmt.Sprintf("%d rows, one per rule", len(s.Matrix.Rules)), Got: fmt.Sprint(len(s.Matrix.Cells))})
	}
	for i, row := range s.Matrix.Cells {
		if len(row) != len(s.Matrix.Traces) {
			return nil, newDecodeError(file, 0, 0, &FieldError{Field: fmt.Sprintf("matrix.cells[%d]", i), Err: ErrInvalidValue,
				Expected: fmt.Sprintf("%d cells, one per trace", len(s.Matrix.Traces)), Got: fmt.Sprint(len(row))})
		}
		if s.Matrix.Results != nil {
			if len(s.Matrix.Results) != len(s.Matrix.Cells) || len(s.Matrix.Results[i]) != len(row) {
				return nil, newDecodeError(file, 0, 0, &FieldError{Field: "matrix.results", Err: ErrInvalidValue,
					Expected: "the shape of matrix.cells", Got: "another shape"})
			}
			for j, res := range s.Matrix.Results[i] {
				if res != "pass" && res != "fail" && res != "not_applicable" {
					return nil, newDecodeError(file, 0, 0, &FieldError{Field: fmt.Sprintf("matrix.results[%d][%d]", i, j), Err: ErrInvalidValue,
						Expected: "pass, fail or not_applicable", Got: fmt.Sprintf("%q", res)})
				}
			}
		}
		for j, st := range row {
			if !slices.Contains(Statuses, st) {
				return nil, newDecodeError(file, 0, 0, &FieldError{Field: fmt.Sprintf("matrix.cells[%d][%d]", i, j), Err: ErrInvalidValue,
					Expected: "satisfied, violated, pending or unresolved", Got: fmt.Sprintf("%q", st)})
			}
		}
	}
	return &s, nil
}

// maxVerdictLine bounds a line of a verdict stream: a verdict carries at
// most one event.
const maxVerdictLine = 2 * DefaultMaxLine

// DecodeVerdicts decodes a verdict stream, one VerdictEvent per line (blank
// lines skipped). It refuses a line whose formatVersion is present and not
// FormatVersion, and ignores members it does not know.
func DecodeVerdicts(r io.Reader) ([]VerdictEvent, error) {
	const file = "verdicts.jsonl"
	var verdicts []VerdictEvent
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		_, line, tooLong, err := readLine(br, maxVerdictLine, nil)
		if err != nil && err != io.EOF {
			return nil, newDecodeError(file, n, 0, fmt.Errorf("read: %w", err))
		}
		if tooLong {
			return nil, newDecodeError(file, n, 0, &FieldError{Err: ErrTooLarge, Expected: fmt.Sprintf("a line of at most %d bytes", maxVerdictLine)})
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var v plainVerdict
			if err := unmarshalArtifact(file, n, line, &v); err != nil {
				return nil, err
			}
			verdicts = append(verdicts, VerdictEvent(v))
		}
		if err == io.EOF {
			return verdicts, nil
		}
	}
}

// unmarshalArtifact decodes data, line n of file (n is 0 for a whole
// file), into v after checking that it is an object with a supported
// formatVersion, which only a verdict line may omit.
func unmarshalArtifact(file string, n int, data []byte, v any) error {
	at := func(off int, fe *FieldError) error {
		if n > 0 {
			return newDecodeError(file, n, off+1, fe)
		}
		line, col := lineCol(data, off)
		return newDecodeError(file, line, col, fe)
	}
	var head struct {
		FormatVersion json.RawMessage `json:"formatVersion"`
	}
	err := json.Unmarshal(data, &head)
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return at(max(int(syntax.Offset)-1, 0), &FieldError{Err: ErrMalformedJSON, Got: syntax.Error()})
	case err != nil || bytes.TrimSpace(data)[0] != '{':
		return at(0, &FieldError{Err: ErrWrongType, Expected: "an object", Got: describeRaw(bytes.TrimSpace(data))})
	case head.FormatVersion == nil && n == 0:
		return at(0, &FieldError{Field: "formatVersion", Err: ErrMissingField, Expected: fmt.Sprint(FormatVersion)})
	case head.FormatVersion != nil && string(head.FormatVersion) != fmt.Sprint(FormatVersion):
		return &DecodeError{File: file, Line: n, Err: ErrUnsupportedVersion,
			Msg: fmt.Sprintf("formatVersion %s is not supported by this build (supports %d)", describeRaw(head.FormatVersion), FormatVersion)}
	}
	if err := json.Unmarshal(data, v); errors.As(err, &typ) {
		return at(locate(data, typ.Field)[0], &FieldError{Field: typ.Field, Err: ErrWrongType, Expected: describeType(typ.Type), Got: typ.Value})
	} else if err != nil {
		return at(0, &FieldError{Err: ErrWrongType, Got: err.Error()})
	}
	return nil
}
