package schema

import (
	"encoding/json"
	"unicode/utf8"
)

// refScan reads one JSON document in place, validating as it goes and
// returning the spans of values rather than copies of them. It accepts
// only what encoding/json accepts (it may refuse more: nesting deeper than
// maxScanDepth); on anything it refuses it sets bad, and every method then
// returns at once, so callers check bad once at the end.
type refScan struct {
	data  []byte
	i     int
	depth int
	bad   bool
}

// maxScanDepth bounds the nesting refScan follows; deeper documents are
// left to encoding/json.
const maxScanDepth = 1000

// ws skips whitespace as JSON defines it.
func (s *refScan) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace, or 0 at the end.
func (s *refScan) peek() byte {
	s.ws()
	if s.bad || s.i >= len(s.data) {
		s.bad = true
		return 0
	}
	return s.data[s.i]
}

// value reads one value and returns its span.
func (s *refScan) value() (start, end int) {
	c := s.peek()
	start = s.i
	switch {
	case s.bad:
	case c == '{' || c == '[':
		s.depth++
		if s.depth > maxScanDepth {
			s.bad = true
			break
		}
		s.i++
		s.container(c)
		s.depth--
	case c == '"':
		s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		s.number()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	default:
		s.bad = true
	}
	return start, s.i
}

// container reads the rest of an object or array whose opening bracket
// open has been read.
func (s *refScan) container(open byte) {
	if open == '{' {
		for more := s.open('}'); more; more = s.next('}') {
			s.key()
			s.value()
		}
		return
	}
	for more := s.open(']'); more; more = s.next(']') {
		s.value()
	}
}

// open is called after an opening bracket: it reports whether a first
// member or element follows, consuming the closing bracket if not.
func (s *refScan) open(closing byte) bool {
	if s.peek() == closing {
		s.i++
		return false
	}
	return !s.bad
}

// next is called after a member or element: it reports whether another
// follows (consuming the comma), consuming the closing bracket if not.
func (s *refScan) next(closing byte) bool {
	switch s.peek() {
	case ',':
		s.i++
		return !s.bad
	case closing:
		s.i++
	default:
		s.bad = true
	}
	return false
}

// key reads an object key and its colon. It returns the key's text
// between the quotes; plain is false when the key has an escape or is not
// valid UTF-8, so that its text is not its value.
func (s *refScan) key() (key []byte, plain bool) {
	if s.peek() != '"' {
		s.bad = true
		return nil, false
	}
	start, end, plain := s.str()
	if s.peek() != ':' {
		s.bad = true
		return nil, false
	}
	s.i++
	if s.bad {
		return nil, false
	}
	return s.data[start+1 : end-1], plain
}

// str reads a string literal and returns its span, quotes included; plain
// is true when it has no escape and is valid UTF-8, so that the bytes
// between the quotes are its value.
func (s *refScan) str() (start, end int, plain bool) {
	start = s.i
	s.i++ // the opening quote
	plain, ascii := true, true
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			if !ascii && !utf8.Valid(s.data[start+1:s.i-1]) {
				plain = false
			}
			return start, s.i, plain
		case c < 0x20:
			s.bad = true
			return start, s.i, false
		case c == '\\':
			plain = false
			s.escape()
			if s.bad {
				return start, s.i, false
			}
		default:
			ascii = ascii && c < utf8.RuneSelf
			s.i++
		}
	}
	s.bad = true
	return start, s.i, false
}

// escape reads an escape sequence at s.i.
func (s *refScan) escape() {
	if s.i+1 >= len(s.data) {
		s.bad = true
		return
	}
	switch s.data[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
	case 'u':
		if s.i+6 > len(s.data) {
			s.bad = true
			return
		}
		for _, h := range s.data[s.i+2 : s.i+6] {
			if !isHex(h) {
				s.bad = true
				return
			}
		}
		s.i += 6
	default:
		s.bad = true
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a number as JSON defines it.
func (s *refScan) number() {
	if s.data[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.data) && s.data[s.i] == '0':
		s.i++
	case s.i < len(s.data) && s.data[s.i] >= '1' && s.data[s.i] <= '9':
		s.digits()
	default:
		s.bad = true
		return
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			s.bad = true
			return
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			s.bad = true
		}
	}
}

// digits reads decimal digits and returns how many.
func (s *refScan) digits() int {
	n := 0
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// literal reads the literal word.
func (s *refScan) literal(word string) {
	if len(s.data)-s.i < len(word) || string(s.data[s.i:s.i+len(word)]) != word {
		s.bad = true
		return
	}
	s.i += len(word)
}

// stringValue returns the value of the string literal lit (quotes
// included) as encoding/json decodes it; plain is str's.
func stringValue(lit []byte, plain bool) string {
	if plain {
		return string(lit[1 : len(lit)-1])
	}
	var v string
	_ = json.Unmarshal(lit, &v) // lit is a well-formed string literal
	return v
}
