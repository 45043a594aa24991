package record

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
)

// shape summarises a region map: the variables the constraints mention,
// by the number of constraints mentioning each (ties in order of first
// mention), and the distinct outcomes in region order.
func shape(regions []Region) *Shape {
	s := &Shape{SplitsOn: []string{}, OutcomeLabels: []string{}}
	count := map[string]int{}
	var order []string
	for _, r := range regions {
		for _, c := range r.Constraints {
			for _, v := range variables(c) {
				if count[v] == 0 {
					order = append(order, v)
				}
				count[v]++
			}
		}
		if l := r.Label(); l != "" && !slices.Contains(s.OutcomeLabels, l) {
			s.OutcomeLabels = append(s.OutcomeLabels, l)
		}
	}
	first := map[string]int{}
	for i, v := range order {
		first[v] = i
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(first[a], first[b])) })
	s.SplitsOn = append(s.SplitsOn, order...)
	s.Outcomes = len(s.OutcomeLabels)
	return s
}

// keywords are words of constraint languages that are not variables.
var keywords = map[string]bool{
	"not": true, "and": true, "or": true, "xor": true, "true": true, "false": true, "if": true, "then": true,
	"else": true, "in": true, "let": true, "mod": true, "fun": true, "with": true, "when": true, "match": true,
	"implies": true, "forall": true, "exists": true, "is": true, "null": true, "none": true,
}

// variables lists the variables one constraint mentions, each once: the
// names (dotted paths such as s.status) that start with a lower-case
// letter or an underscore and are not keywords; capitalised names are
// constructors or modules, quoted text is skipped.
func variables(c string) []string {
	var out []string
	rs := []rune(c)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_' || rs[j] == '\'' ||
				(rs[j] == '.' && j+1 < len(rs) && (unicode.IsLetter(rs[j+1]) || rs[j+1] == '_'))) {
				j++
			}
			name := string(rs[i:j])
			if (unicode.IsLower(r) || r == '_') && !keywords[strings.ToLower(name)] && !slices.Contains(out, name) {
				out = append(out, name)
			}
			i = j
		case unicode.IsDigit(r):
			for i < len(rs) && (unicode.IsDigit(rs[i]) || unicode.IsLetter(rs[i]) || rs[i] == '.' || rs[i] == '_') {
				i++
			}
		default:
			i++
		}
	}
	return out
}
