package ruleset

import "strings"

// Closest returns the name among known that word most probably misspells,
// or "" when none is close: at most two edits apart (an insertion, a
// deletion, a substitution or a swap of neighbours), and at most one edit
// per four letters of word; a word of fewer than four letters matches
// nothing, since it is a few edits from everything.
// Case is ignored; word itself, in any case, is not a misspelling of
// itself unless the cases differ.
func Closest(word string, known []string) string {
	best, bestD := "", 3
	limit := min(2, len(word)/4)
	lw := strings.ToLower(word)
	for _, k := range known {
		if k == word {
			return ""
		}
		d := distance(lw, strings.ToLower(k))
		if d <= limit && d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance between a and b: the
// edits Closest counts, by rune.
func distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
