package record

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/trace"
)

// Run is one run to read the record of. Reference says it was converted
// from a reference trace, whose event times are derived rather than
// recorded: an entry's time then comes only from its created_at or its
// producing action's timestamp.
type Run struct {
	schema.Run
	Reference bool
}

// Extract reads the record the runs established, in the order given (a
// later run is newer). It refuses a run whose trace declares a
// spec_version of another major version than SpecMajor (*VersionError).
// Payload fields it cannot read are reported in problems, never dropped
// in silence; the entry stands with what could be read.
func Extract(runs []Run) (rec *Record, problems []string, err error) {
	x := &extractor{rec: &Record{}}
	for _, r := range runs {
		if err := CheckVersion(r.Run); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range runs {
		x.run(r)
	}
	x.freshen()
	return x.rec, x.problems, nil
}

// CheckVersion refuses a run whose run.start declares a spec_version this
// build does not read.
func CheckVersion(r schema.Run) error {
	for _, ev := range r.Events {
		if ev.Type != schema.TypeRunStart || ev.Start == nil {
			continue
		}
		raw, ok := ev.Start.Extra["spec_version"]
		if !ok {
			return nil
		}
		got := jsonText(raw)
		majorText, _, _ := strings.Cut(got, ".")
		major, err := strconv.Atoi(majorText)
		if err != nil || major < 0 {
			major = -1
		}
		if major != SpecMajor {
			return &VersionError{Got: got, Major: major}
		}
		return nil
	}
	return nil
}

// change is something the trace says about a file after some point: an
// edit (Hash "") or a version of it with a hash.
type change struct {
	path  string
	order int
	hash  string
	what  string
}

// pending is an entry with the point after which a change of its source
// makes it out of date.
type pending struct {
	e     *Entry
	point int
}

type extractor struct {
	rec      *Record
	problems []string
	order    int // of the next event, across runs
	changes  []change
	pending  []pending
}

// run reads the entries, gaps and file changes of one run.
func (x *extractor) run(r Run) {
	t := trace.Build(r.ID, r.Events)
	orders := map[*schema.Artifact]int{}
	times := map[*schema.Artifact]time.Time{}
	positions := map[*schema.Event]*trace.Position{}
	for _, p := range t.Positions {
		positions[p.Event] = p
	}
	for i := range r.Events {
		ev := &r.Events[i]
		o := x.order
		x.order++
		ts := ev.TS
		if r.Reference {
			ts = time.Time{}
		}
		switch {
		case ev.Action != nil:
			if p := positions[ev]; p != nil {
				x.edit(p, o)
			}
			at := ts
			if t, ok := parseTime(ev.Action.Timestamp); ok {
				at = t
			}
			for j := range ev.Action.Artifacts {
				orders[&ev.Action.Artifacts[j]] = o
				times[&ev.Action.Artifacts[j]] = at
			}
		case ev.Artifact != nil:
			orders[ev.Artifact], times[ev.Artifact] = o, ts
		case ev.Residual != nil:
			orders[ev.Residual], times[ev.Residual] = o, ts
		}
	}
	superseded := map[string]bool{}
	for _, a := range t.Artifacts {
		for _, id := range a.Supersedes {
			superseded[id] = true
		}
	}
	for _, a := range t.Artifacts {
		if a.Type == "SourceCode" {
			if h := hashOf(a); h != "" {
				x.changes = append(x.changes, change{path: cleanPath(a.Target()), order: orders[a.Artifact], hash: h,
					what: fmt.Sprintf("%s@%s recorded by artifact %s", cleanPath(a.Target()), h, a.ID)})
			}
		}
		kind, ok := entryKinds[a.Type]
		if !ok {
			continue
		}
		e := x.entry(t, r, a, kind, orders)
		if e == nil {
			continue
		}
		e.Superseded = superseded[a.ID]
		e.Established = established(a, times[a.Artifact])
		x.rec.Entries = append(x.rec.Entries, e)
	}
	x.gaps(t, r.ID)
}

// entry makes the entry of result artifact a, or nil when a is about no
// symbol.
func (x *extractor) entry(t *trace.Trace, r Run, a *trace.Artifact, kind string, orders map[*schema.Artifact]int) *Entry {
	symbol := symbolOf(a)
	if symbol == "" {
		return nil
	}
	p := a.Payload()
	e := &Entry{Symbol: symbol, Kind: kind, Run: r.ID, ArtifactID: a.ID, ArtifactType: a.Type,
		Status: strings.ToLower(str(p, "status")), Order: orders[a.Artifact], Ref: a.Ref}
	if e.Ref == "" {
		e.Ref = a.ID
	}
	e.Grade = gradeOf(p, kind, e.Status)
	var point int
	e.File, e.Source, point = sourceOf(t, a, symbol, orders)
	x.pending = append(x.pending, pending{e, point})
	where := fmt.Sprintf("run %s, artifact %s", r.ID, a.ID)
	switch kind {
	case KindDecomposition:
		e.Decomposition = x.decomposition(a.Artifact.Payload, where)
	case KindConformance:
		e.Conformance = x.conformance(p, e.Status, where)
		e.Claim = e.Conformance.Reference
	case KindVerification:
		for _, q := range a.Parents {
			if q.Type == "VerificationGoal" || q.Type == "DefineVerificationGoal" {
				e.Claim = q.ID
			}
		}
	}
	return e
}

// edit records the change an action makes to its target file: an edit,
// unless it failed.
func (x *extractor) edit(p *trace.Position, order int) {
	a := p.Action
	if a.Status == schema.ActionFailed {
		return
	}
	target := p.Target()
	switch {
	case editTypes[a.Type]:
	case strings.HasPrefix(a.Capability, "file.write") || strings.HasPrefix(a.Capability, "file.delete"):
		var payload struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(a.Payload, &payload) == nil && payload.Path != "" {
			target = payload.Path
		}
	default:
		return
	}
	if target == "" {
		return
	}
	x.changes = append(x.changes, change{path: cleanPath(target), order: order, what: fmt.Sprintf("%s edited by action %d", cleanPath(target), a.ID)})
}

// editTypes are the action types that change the file they target.
var editTypes = map[string]bool{"EditFile": true, "CreateFile": true, "DeleteFile": true, "WriteFile": true}

// freshen sets each entry's Changed from the changes of its source file
// after the point it was derived from that source: the last change wins,
// so a file edited and then brought back to the recorded hash is not
// changed.
func (x *extractor) freshen() {
	for _, p := range x.pending {
		e := p.e
		if e.Source.Path == "" {
			continue
		}
		reason := ""
		for _, c := range x.changes {
			if c.order <= p.point || c.path != cleanPath(e.Source.Path) {
				continue
			}
			switch {
			case c.hash == "":
				reason = c.what
			case e.Source.Hash != "":
				if sameHash(c.hash, e.Source.Hash) {
					reason = ""
				} else {
					reason = c.what
				}
			}
		}
		e.Changed = reason
	}
	x.pending = nil
}

// gaps adds the run's open residuals.
func (x *extractor) gaps(t *trace.Trace, run string) {
	status := map[string]string{}
	for _, a := range t.Residuals {
		s := str(a.Payload(), "status")
		if s == "" {
			s = "Open"
		}
		status[a.ID] = s
	}
	for _, a := range t.Artifacts {
		if a.Type != "ResidualResolution" {
			continue
		}
		p := a.Payload()
		id := scalarText(p["residual_id"])
		if _, ok := status[id]; ok && str(p, "status") != "" {
			status[id] = str(p, "status")
		}
	}
	for _, a := range t.Residuals {
		if !strings.EqualFold(status[a.ID], "open") {
			continue
		}
		p := a.Payload()
		g := &Gap{ID: a.ID, State: strings.ToLower(str(p, "state")), Severity: strings.ToLower(str(p, "severity")),
			Statement: str(p, "statement"), Run: run}
		if g.State == "" {
			g.State = "open"
		}
		if s := str(p, "target"); s != "" {
			g.Names = append(g.Names, s)
		}
		if ids, ok := p["related_artifact_ids"].([]any); ok {
			for _, id := range ids {
				g.Names = append(g.Names, scalarText(id))
			}
		}
		g.Names = append(g.Names, a.DerivedFrom...)
		x.rec.Gaps = append(x.rec.Gaps, g)
	}
}

// symbolOf resolves the symbol an artifact is about: its payload's
// target_symbol, else its goal's for a verification result, else the one
// target_symbol in its derived_from lineage.
func symbolOf(a *trace.Artifact) string {
	if s := str(a.Payload(), "target_symbol"); s != "" {
		return s
	}
	if a.Type == "VerificationResult" {
		for _, g := range a.Parents {
			if s := str(g.Payload(), "target_symbol"); s != "" && (g.Type == "VerificationGoal" || g.Type == "DefineVerificationGoal") {
				return s
			}
		}
	}
	found := ""
	for _, x := range a.Ancestors() {
		if s := str(x.Payload(), "target_symbol"); s != "" {
			if found != "" && found != s {
				return "" // two symbols in the lineage: none is the one
			}
			found = s
		}
	}
	return found
}

// sourceOf resolves the file an entry is about and the source it was
// derived from: its payload's path or file, else the nearest source in its
// lineage (a SourceCode artifact, or a "file@hash" in a derived_from that
// names no artifact), else a SourceCode artifact declaring the symbol. The
// point is the order of what recorded the source: changes after it make
// the entry out of date.
func sourceOf(t *trace.Trace, a *trace.Artifact, symbol string, orders map[*schema.Artifact]int) (string, Source, int) {
	p := a.Payload()
	file := str(p, "path")
	if file == "" {
		file = str(p, "file")
	}
	file = cleanPath(file)
	seen := map[*trace.Artifact]bool{a: true}
	queue := []*trace.Artifact{a}
	for len(queue) > 0 {
		y := queue[0]
		queue = queue[1:]
		for _, id := range y.DerivedFrom {
			if t.Lookup(id) != nil {
				continue
			}
			if f, h, ok := splitFileHash(id); ok && (file == "" || f == file) {
				return f, Source{f, h}, orders[y.Artifact]
			}
		}
		if y != a && y.Type == "SourceCode" {
			if f := cleanPath(y.Target()); file == "" || f == file {
				return f, Source{f, hashOf(y)}, orders[y.Artifact]
			}
		}
		for _, q := range y.Parents {
			if !seen[q] {
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	if file == "" {
		for i := len(t.Artifacts) - 1; i >= 0; i-- {
			y := t.Artifacts[i]
			if y.Type != "SourceCode" {
				continue
			}
			if syms, ok := y.Payload()["symbols"].([]any); ok {
				for _, s := range syms {
					if s == symbol {
						file = cleanPath(y.Target())
						break
					}
				}
			}
			if file != "" {
				break
			}
		}
	}
	return file, Source{Path: file}, orders[a.Artifact]
}

// splitFileHash splits "file@hash".
func splitFileHash(s string) (file, hash string, ok bool) {
	i := strings.LastIndexByte(s, '@')
	if i <= 0 || i == len(s)-1 {
		return "", "", false
	}
	return cleanPath(s[:i]), s[i+1:], true
}

// hashOf is the hash a SourceCode artifact records: a "file@hash" in its
// derived_from, else its payload's sha256 or hash.
func hashOf(a *trace.Artifact) string {
	for _, id := range a.DerivedFrom {
		if _, h, ok := splitFileHash(id); ok {
			return h
		}
	}
	p := a.Payload()
	if h := str(p, "sha256"); h != "" {
		return h
	}
	return str(p, "hash")
}

// gradeOf is the grade of an entry: from its oracle's evidence strength;
// a verification that established nothing (status unknown, or bounded,
// which is never a proof) is unranked.
func gradeOf(p map[string]any, kind, status string) string {
	if kind == KindVerification && (status == "unknown" || status == "bounded") {
		return GradeUnranked
	}
	oracle, _ := p["oracle"].(map[string]any)
	if g, ok := grades[strings.ToLower(str(oracle, "evidence_strength"))]; ok {
		return g
	}
	return GradeUnranked
}

// established is when an artifact was made: its created_at, else ts (the
// time of its event, or of its producing action's timestamp), zero when
// neither is known.
func established(a *trace.Artifact, ts time.Time) time.Time {
	if t, ok := parseTime(a.CreatedAt); ok {
		return t
	}
	if a.Producer != nil {
		if t, ok := parseTime(a.Producer.Action.Timestamp); ok {
			return t
		}
	}
	return ts
}

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// cleanPath is a file path in one spelling: "./a//b.py" is "a/b.py".
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(strings.ReplaceAll(p, "\\", "/"))
}

// str is m[key] when it is a string.
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// scalarText is a decoded JSON string or number as text ("3" for 3).
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonText is a raw JSON string's content, or the raw text of any other
// value.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
