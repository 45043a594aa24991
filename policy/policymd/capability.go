package policymd

import (
	"fmt"
	"strings"
)

// MatchCapability reports whether the capability pattern matches capability
// (seed 004 §2):
//
//   - "*" alone matches every capability, the empty one included;
//   - a pattern without "*" matches only the identical capability;
//   - otherwise pattern and capability must have the same number of
//     dot-separated segments, a "*" segment matches exactly one non-empty
//     segment and every other segment must be equal. So "payment.*" matches
//     "payment.send" but neither "payment" nor "payment.a.b".
//
// Matching is case-sensitive.
func MatchCapability(pattern, capability string) bool {
	if pattern == "*" {
		return true
	}
	if !strings.Contains(pattern, "*") {
		return pattern == capability
	}
	for {
		p, prest, pmore := strings.Cut(pattern, ".")
		c, crest, cmore := strings.Cut(capability, ".")
		if p == "*" {
			if c == "" {
				return false
			}
		} else if p != c {
			return false
		}
		if pmore != cmore {
			return false
		}
		if !pmore {
			return true
		}
		pattern, capability = prest, crest
	}
}

// CheckCapabilityPattern returns an error saying why pattern is not a valid
// capability pattern: it is empty, has an empty segment, or uses "*" other
// than as a whole segment.
func CheckCapabilityPattern(pattern string) error {
	if pattern == "" {
		return fmt.Errorf("capability must not be empty")
	}
	if pattern == "*" {
		return nil
	}
	for _, seg := range strings.Split(pattern, ".") {
		switch {
		case seg == "":
			return fmt.Errorf("capability %q has an empty segment", pattern)
		case seg != "*" && strings.Contains(seg, "*"):
			return fmt.Errorf("capability %q: * must be a whole segment (as in payment.*)", pattern)
		case strings.ContainsAny(seg, " \t\r\n"):
			return fmt.Errorf("capability %q contains white space", pattern)
		}
	}
	return nil
}
