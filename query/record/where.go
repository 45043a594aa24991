package record

import (
	"errors"
	"fmt"
	"strings"
)

// The forms of a --where expression.
const (
	WhereAll       = ""          // no narrowing
	WhereSubstring = "substring" // Text occurs in a constraint or the invariant
	WhereOutcome   = "outcome"   // the region produces the outcome Text
	WhereDiverged  = "diverged"  // a conformance check disagreed on the region
	WhereRaised    = "raised"    // the code raised before returning on the region
)

// Where narrows a region map: the parsed form of --where.
type Where struct {
	Form string // WhereAll, WhereSubstring, …
	Text string // the substring, or the outcome label
}

// ErrWhere is the error of every expression ParseWhere refuses.
var ErrWhere = errors.New("expected a substring of a constraint or invariant, outcome:LABEL, diverged or raised")

// ParseWhere parses a --where expression: "diverged", "raised",
// "outcome:LABEL", or else a substring to find in a region's constraints
// and invariant. Space around the expression does not count; an empty
// expression or label is refused.
func ParseWhere(expr string) (Where, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return Where{}, fmt.Errorf("an empty expression: %w", ErrWhere)
	case expr == WhereDiverged:
		return Where{Form: WhereDiverged}, nil
	case expr == WhereRaised:
		return Where{Form: WhereRaised}, nil
	}
	if label, ok := strings.CutPrefix(expr, "outcome:"); ok {
		label = strings.TrimSpace(label)
		if label == "" {
			return Where{}, fmt.Errorf("outcome: without a label: %w", ErrWhere)
		}
		return Where{Form: WhereOutcome, Text: label}, nil
	}
	return Where{Form: WhereSubstring, Text: expr}, nil
}

// String is the expression as ParseWhere reads it back.
func (w Where) String() string {
	switch w.Form {
	case WhereOutcome:
		return "outcome:" + w.Text
	case WhereDiverged, WhereRaised:
		return w.Form
	}
	return w.Text
}

// matches reports whether region r passes a substring or outcome filter.
func (w Where) matches(r Region) bool {
	switch w.Form {
	case WhereSubstring:
		if strings.Contains(r.Invariant, w.Text) {
			return true
		}
		for _, c := range r.Constraints {
			if strings.Contains(c, w.Text) {
				return true
			}
		}
		return false
	case WhereOutcome:
		return strings.EqualFold(r.Label(), w.Text)
	}
	return true
}
