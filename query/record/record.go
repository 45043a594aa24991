package record

import (
	"encoding/json"
	"fmt"
	"time"
)

// The kinds of entry: what backs it.
const (
	KindDecomposition = "decomposition"
	KindVerification  = "verification"
	KindConformance   = "conformance"
	KindModel         = "model"
	KindTests         = "tests"
)

// The grades, strongest first, and the grade of evidence with no ranked
// strength.
const (
	GradeProved    = "proved"
	GradeWitnessed = "witnessed"
	GradeTested    = "tested"
	GradeChecked   = "checked"
	GradeAttested  = "attested"
	GradeUnranked  = "unranked"
)

// The freshness states of an entry.
const (
	Fresh     = "fresh"
	OutOfDate = "out_of_date"
	Unknown   = "unknown"
)

// entryKinds maps the artifact types a record entry comes from to the
// entry's kind.
var entryKinds = map[string]string{
	"VerificationResult":       KindVerification,
	"StateSpaceAnalysisResult": KindDecomposition,
	"Decomposition":            KindDecomposition,
	"ConformanceResult":        KindConformance,
	"CoSimulationResult":       KindConformance,
	"Observation":              KindVerification,
	"UserApproval":             KindVerification,
	"CommandResult":            KindTests,
	"TestResult":               KindTests,
	"GeneratedTests":           KindTests,
	"IMLModel":                 KindModel,
	"FormalModel":              KindModel,
}

// grades maps an oracle's evidence_strength to the grade it gives.
var grades = map[string]string{
	"proof":           GradeProved,
	"sat":             GradeWitnessed,
	"tests":           GradeTested,
	"static_analysis": GradeChecked,
	"attested":        GradeAttested,
}

// Record is what a set of runs established: its entries in the order they
// were made (a later entry is newer) and the open residuals, the gaps.
type Record struct {
	Entries []*Entry
	Gaps    []*Gap
}

// Entry is one record entry: what one result artifact established about a
// symbol. Everything a query answers is here, so that entries can be
// stored and queried again without the trace; only the comparison with a
// checkout (Freshness) reads anything else.
type Entry struct {
	Symbol       string
	File         string // "" when the record names no source file
	Kind         string // KindDecomposition, …
	Grade        string // GradeProved, …, GradeUnranked
	Ref          string // the artifact's ref, else its id
	Run          string // the run that made it
	ArtifactID   string
	ArtifactType string
	Status       string    // the result's payload status, lower-cased ("" when none)
	Order        int       // position in the record: a larger Order is newer
	Established  time.Time // zero when the trace does not say
	// Claim tells apart entries of one kind that stand side by side: the
	// verification goal a result is about, the reference a conformance
	// check compared with. Within (symbol, file, kind, claim) the latest
	// entry wins.
	Claim      string
	Superseded bool // a later artifact of its run supersedes it

	Source Source // the source the entry was derived from
	// Changed says why the trace shows the source changed after the entry
	// was derived from it ("" when it does not): a later edit of the file,
	// or a later version of it with another hash.
	Changed string

	Decomposition *Decomposition // kind decomposition
	Conformance   *Conformance   // kind conformance
}

// Source is the source an entry was derived from: the spec's
// derived_from "file@hash". Hash is "" when no hash was recorded.
type Source struct {
	Path string
	Hash string
}

// String is "path@hash", or "" when no hash was recorded.
func (s Source) String() string {
	if s.Hash == "" {
		return ""
	}
	return s.Path + "@" + s.Hash
}

// Decomposition is the region map of a decomposition entry.
type Decomposition struct {
	Complete    *bool             // nil when the payload does not say
	Bound       *int              // the depth recursion was bounded at; nil when none
	Regions     []Region          // in the payload's order
	Assumptions []json.RawMessage // as the payload gives them
	Scope       *string
}

// Region is one region of a decomposition: the constraints that reach it
// and the invariant it produces.
type Region struct {
	ID          string   `json:"id"`
	Constraints []string `json:"constraints"`
	Invariant   string   `json:"invariant"`
	Outcome     string   `json:"-"` // the region's outcome label, when the payload names one
	Witness     *Witness `json:"witness,omitempty"`
}

// Label is the outcome the region produces: its outcome label, else its
// invariant.
func (r Region) Label() string {
	if r.Outcome != "" {
		return r.Outcome
	}
	return r.Invariant
}

// Witness is an input that reaches a region and what the code returned on
// it, when the engine synthesised one.
type Witness struct {
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output,omitempty"`
}

// Conformance is what a conformance (or co-simulation) check found.
type Conformance struct {
	Reference string
	Outcome   string
	Total     *int
	Diverged  *int
	Raised    *int
	// DivergedRegions and RaisedRegions name the regions, when the result
	// does; nil when it gives counts only.
	DivergedRegions []string
	RaisedRegions   []string
}

// Gap is an open residual: a declared gap in what is known.
type Gap struct {
	ID        string
	State     string // the residual's state, else its effective status, lower-cased
	Severity  string // lower-cased
	Statement string
	Run       string
	// Names are the symbol or the artifact ids it is about: its target,
	// related_artifact_ids and derived_from.
	Names []string
}

// about reports whether the gap names the symbol or one of the entries.
func (g *Gap) about(symbol string, entries []*Entry) bool {
	for _, n := range g.Names {
		if n == symbol {
			return true
		}
		for _, e := range entries {
			if e.Run == g.Run && (n == e.ArtifactID || n == e.Ref) {
				return true
			}
		}
	}
	return false
}

// VersionError is a trace the record query cannot read for its version.
type VersionError struct {
	Got   string // the spec_version the trace declares
	Major int    // its major version; -1 when it does not parse
}

// SpecMajor is the major version of the trace spec the record query reads.
const SpecMajor = 1

func (e *VersionError) Error() string {
	what := "too old"
	switch {
	case e.Major < 0:
		what = "not a version"
	case e.Major > SpecMajor:
		what = "newer than this build reads"
	}
	return fmt.Sprintf("trace spec %s is %s: the record query needs trace spec %d.x (spec_version %d.0 or later, below %d.0)",
		e.Got, what, SpecMajor, SpecMajor, SpecMajor+1)
}
