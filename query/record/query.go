package record

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Index is the answer of `ponens trace symbols`: one row per (symbol,
// file) the record knows anything about, and counts by freshness.
type Index struct {
	Symbols []IndexRow   `json:"symbols"`
	Summary IndexSummary `json:"summary"`
}

// IndexRow is one (symbol, file) of the index: its latest standing entry,
// the freshness of what stands, its region count and its gaps.
type IndexRow struct {
	Symbol        string  `json:"symbol"`
	File          *string `json:"file"`
	Kind          string  `json:"kind"`
	Grade         string  `json:"grade"`
	Freshness     string  `json:"freshness"`
	Regions       *int    `json:"regions"` // of the standing decomposition; null when there is none
	Gaps          int     `json:"gaps"`
	Requirement   *string `json:"requirement"`
	Ref           string  `json:"ref"`
	EstablishedAt *string `json:"established_at"`
}

// IndexSummary counts the rows of the index by freshness.
type IndexSummary struct {
	Symbols   int `json:"symbols"`
	Fresh     int `json:"fresh"`
	OutOfDate int `json:"out_of_date"`
	Unknown   int `json:"unknown"`
}

// Absence is the answer for a symbol the record knows nothing about:
// not an error, the caller should read the source.
type Absence struct {
	Symbol string  `json:"symbol"`
	Known  bool    `json:"known"`
	File   *string `json:"file,omitempty"` // the file asked about, when one was
}

// Detail is the answer of `ponens trace symbol`: what is known about one
// symbol in one file.
type Detail struct {
	Symbol      string            `json:"symbol"`
	Known       bool              `json:"known"`
	File        *string           `json:"file"`
	Freshness   Freshness         `json:"freshness"`
	Evidence    []Evidence        `json:"evidence"`
	Shape       *Shape            `json:"shape"`
	Gaps        []GapRow          `json:"gaps"`
	Assumptions []json.RawMessage `json:"assumptions"`
	Scope       *string           `json:"scope"`
}

// Evidence is one standing entry in a Detail.
type Evidence struct {
	Kind    string `json:"kind"`
	Grade   string `json:"grade"`
	Ref     string `json:"ref"`
	Regions *int   `json:"regions,omitempty"` // decompositions
	*ConformanceEvidence
	Status    string `json:"status,omitempty"` // the result's status, for other kinds
	Freshness string `json:"freshness"`
}

// ConformanceEvidence is what a conformance entry adds to its Evidence.
type ConformanceEvidence struct {
	Reference *string `json:"reference"`
	Outcome   *string `json:"outcome"`
	Total     *int    `json:"total"`
	Diverged  *int    `json:"diverged"`
	Raised    *int    `json:"raised"`
}

// Shape is what the behaviour of a decomposed symbol turns on: the
// variables its regions' constraints mention, most often first, and its
// distinct outcomes.
type Shape struct {
	SplitsOn      []string `json:"splits_on"`
	Outcomes      int      `json:"outcomes"`
	OutcomeLabels []string `json:"outcome_labels"`
}

// GapRow is an open residual about the symbol.
type GapRow struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Severity  string `json:"severity"`
	Statement string `json:"statement"`
}

// Regions is the answer of `ponens trace symbol --regions`: the region map
// of the standing decomposition, narrowed by a Where and cut to a limit.
// Total counts the regions that match; Returned those given.
type Regions struct {
	Symbol      string            `json:"symbol"`
	Known       bool              `json:"known"`
	File        *string           `json:"file"`
	Ref         *string           `json:"ref"`
	Freshness   *Freshness        `json:"freshness"`
	Complete    *bool             `json:"complete"`
	Bound       *int              `json:"bound"`
	Scope       *string           `json:"scope"`
	Assumptions []json.RawMessage `json:"assumptions"`
	Where       *string           `json:"where,omitempty"`
	Total       int               `json:"total"`
	Returned    int               `json:"returned"`
	// Unknown says what the record cannot tell, when the answer is empty
	// for want of it: no decomposition, no conformance check, a check that
	// counts divergences without naming the regions.
	Unknown string   `json:"unknown,omitempty"`
	Regions []Region `json:"regions"`
}

// AmbiguousError is a symbol asked without a file that the record knows
// in several files.
type AmbiguousError struct {
	Symbol string
	Files  []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s is recorded in %d files (%s): name one", e.Symbol, len(e.Files), strings.Join(e.Files, ", "))
}

// key is one (symbol, file) of the record.
type key struct{ symbol, file string }

// standing returns the entries of (symbol, file) that stand: per (kind,
// claim) the latest that is not superseded, newest first.
func (r *Record) standing(k key) []*Entry {
	var out []*Entry
	seen := map[[2]string]bool{}
	for i := len(r.Entries) - 1; i >= 0; i-- {
		e := r.Entries[i]
		if e.Symbol != k.symbol || e.File != k.file || e.Superseded {
			continue
		}
		if c := [2]string{e.Kind, e.Claim}; !seen[c] {
			seen[c] = true
			out = append(out, e)
		}
	}
	return out
}

// keys returns the (symbol, file) pairs of the record, by file, then
// symbol.
func (r *Record) keys() []key {
	var ks []key
	seen := map[key]bool{}
	for _, e := range r.Entries {
		if k := (key{e.Symbol, e.File}); !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b key) int { return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.symbol, b.symbol)) })
	return ks
}

// freshness is the freshness of what stands: out_of_date when any entry
// is, else unknown when any is, else fresh; the newest entry in the worst
// state says why.
func freshness(es []*Entry, c *Checkout) Freshness {
	rank := map[string]int{Fresh: 0, Unknown: 1, OutOfDate: 2}
	var worst Freshness
	for i, e := range es {
		f := e.Freshness(c)
		if i == 0 || rank[f.State] > rank[worst.State] {
			worst = f
		}
	}
	return worst
}

// Index answers `ponens trace symbols`: checkout, when not nil, is the
// current source; reqs, when not nil, names the requirement each symbol
// serves.
func (r *Record) Index(c *Checkout, reqs *Requirements) Index {
	idx := Index{Symbols: []IndexRow{}}
	for _, k := range r.keys() {
		es := r.standing(k)
		if len(es) == 0 {
			continue // every entry superseded
		}
		latest := es[0]
		row := IndexRow{Symbol: k.symbol, File: optional(k.file), Kind: latest.Kind, Grade: latest.Grade,
			Freshness: freshness(es, c).State, Gaps: len(r.gaps(k.symbol, es)), Ref: latest.Ref,
			EstablishedAt: timeText(latest.Established)}
		if d := decomposition(es); d != nil {
			n := len(d.Decomposition.Regions)
			row.Regions = &n
		}
		if reqs != nil {
			row.Requirement = optional(reqs.For(k.symbol, k.file))
		}
		switch row.Freshness {
		case Fresh:
			idx.Summary.Fresh++
		case OutOfDate:
			idx.Summary.OutOfDate++
		default:
			idx.Summary.Unknown++
		}
		idx.Symbols = append(idx.Symbols, row)
	}
	idx.Summary.Symbols = len(idx.Symbols)
	return idx
}

// lookup finds the standing entries of symbol in file, or in its one file
// when file is "". ok is false when nothing stands.
func (r *Record) lookup(symbol, file string) (key, []*Entry, error) {
	file = cleanPath(file)
	var files []string
	for _, k := range r.keys() {
		if k.symbol == symbol && (file == "" || k.file == file) && len(r.standing(k)) > 0 {
			files = append(files, k.file)
		}
	}
	switch len(files) {
	case 0:
		return key{}, nil, nil
	case 1:
		k := key{symbol, files[0]}
		return k, r.standing(k), nil
	}
	return key{}, nil, &AmbiguousError{Symbol: symbol, Files: files}
}

// Detail answers `ponens trace symbol`: what is known about symbol in file
// (any file when "", which must then be one). It returns an Absence or a
// Detail.
func (r *Record) Detail(symbol, file string, c *Checkout) (any, error) {
	k, es, err := r.lookup(symbol, file)
	if err != nil || es == nil {
		return absence(symbol, file), err
	}
	d := Detail{Symbol: symbol, Known: true, File: optional(k.file), Freshness: freshness(es, c),
		Gaps: []GapRow{}, Assumptions: []json.RawMessage{}}
	for _, e := range es {
		d.Evidence = append(d.Evidence, evidence(e, c))
	}
	for _, g := range r.gaps(symbol, es) {
		d.Gaps = append(d.Gaps, GapRow{ID: g.ID, State: g.State, Severity: g.Severity, Statement: g.Statement})
	}
	if e := decomposition(es); e != nil {
		dec := e.Decomposition
		d.Shape = shape(dec.Regions)
		d.Scope = dec.Scope
		if dec.Assumptions != nil {
			d.Assumptions = dec.Assumptions
		}
	}
	return d, nil
}

func absence(symbol, file string) Absence {
	return Absence{Symbol: symbol, File: optional(cleanPath(file))}
}

// evidence is the Evidence of one entry.
func evidence(e *Entry, c *Checkout) Evidence {
	ev := Evidence{Kind: e.Kind, Grade: e.Grade, Ref: e.Ref, Freshness: e.Freshness(c).State}
	switch {
	case e.Decomposition != nil:
		n := len(e.Decomposition.Regions)
		ev.Regions = &n
	case e.Conformance != nil:
		cf := e.Conformance
		ev.ConformanceEvidence = &ConformanceEvidence{Reference: optional(cf.Reference), Outcome: optional(cf.Outcome),
			Total: cf.Total, Diverged: cf.Diverged, Raised: cf.Raised}
	default:
		ev.Status = e.Status
	}
	return ev
}

// gaps are the record's gaps about symbol or one of its entries.
func (r *Record) gaps(symbol string, es []*Entry) []*Gap {
	var out []*Gap
	for _, g := range r.Gaps {
		if g.about(symbol, es) {
			out = append(out, g)
		}
	}
	return out
}

// decomposition is the standing decomposition among es (the newest), or
// nil.
func decomposition(es []*Entry) *Entry {
	for _, e := range es {
		if e.Decomposition != nil {
			return e
		}
	}
	return nil
}

// RegionsOf answers `ponens trace symbol --regions`: the regions of the
// standing decomposition of symbol in file that match w, at most limit of
// them (all when limit <= 0). It returns an Absence or a Regions.
func (r *Record) RegionsOf(symbol, file string, w Where, limit int, c *Checkout) (any, error) {
	k, es, err := r.lookup(symbol, file)
	if err != nil || es == nil {
		return absence(symbol, file), err
	}
	out := Regions{Symbol: symbol, Known: true, File: optional(k.file), Assumptions: []json.RawMessage{}, Regions: []Region{}}
	if w.Form != WhereAll {
		s := w.String()
		out.Where = &s
	}
	e := decomposition(es)
	if e == nil {
		out.Unknown = fmt.Sprintf("no decomposition of %s is on record", symbol)
		return out, nil
	}
	dec := e.Decomposition
	f := e.Freshness(c)
	out.Ref, out.Freshness = &e.Ref, &f
	out.Complete, out.Bound, out.Scope = dec.Complete, dec.Bound, dec.Scope
	if dec.Assumptions != nil {
		out.Assumptions = dec.Assumptions
	}
	keep := w.matches
	if w.Form == WhereDiverged || w.Form == WhereRaised {
		ids, unknown := checkedRegions(es, w.Form)
		if unknown != "" {
			out.Unknown = unknown
			return out, nil
		}
		keep = func(r Region) bool { return ids[r.ID] }
	}
	for _, reg := range dec.Regions {
		if !keep(reg) {
			continue
		}
		out.Total++
		if limit <= 0 || len(out.Regions) < limit {
			out.Regions = append(out.Regions, reg)
		}
	}
	out.Returned = len(out.Regions)
	return out, nil
}

// checkedRegions is the set of regions the standing conformance checks
// found diverged (or raised), or why the record cannot tell.
func checkedRegions(es []*Entry, form string) (map[string]bool, string) {
	ids := map[string]bool{}
	checked := false
	for _, e := range es {
		cf := e.Conformance
		if cf == nil {
			continue
		}
		checked = true
		list, n := cf.DivergedRegions, cf.Diverged
		if form == WhereRaised {
			list, n = cf.RaisedRegions, cf.Raised
		}
		if list == nil && n != nil && *n > 0 {
			return nil, fmt.Sprintf("conformance check %s counts %d %s regions without naming them", e.Ref, *n, form)
		}
		if list == nil && n == nil {
			return nil, fmt.Sprintf("conformance check %s does not say which regions %s", e.Ref, form)
		}
		for _, id := range list {
			ids[id] = true
		}
	}
	if !checked {
		return nil, fmt.Sprintf("no conformance check of %s is on record: which regions %s is not known", es[0].Symbol, form)
	}
	return ids, ""
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timeText(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// GapsAbout counts the gaps about e: open residuals that name its symbol
// or it.
func (r *Record) GapsAbout(e *Entry) int {
	return len(r.gaps(e.Symbol, []*Entry{e}))
}
