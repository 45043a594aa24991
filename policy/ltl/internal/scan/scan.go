// Package scan is the lexer of the policy language. It turns formula text into
// tokens on demand, so that the parser can ask for the raw text of an
// attribution argument (conforms_to(ref:atlas:x@2)) instead of a token.
package scan

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind int

// Token kinds. Operators have one kind whatever their surface (unicode or
// ASCII): "→", "->" and "=>" are all Implies.
const (
	EOF Kind = iota
	Illegal
	Ident  // any identifier, keywords included; the parser decides
	Number // 12, 3.5
	String // "text" or 'text'
	LParen
	RParen
	LBrace
	RBrace
	LBracket
	RBracket
	Comma
	Dot   // '.'
	Colon // ':'
	Bar   // '|'
	Not   // ¬ ! not
	And   // ∧ /\ &&
	Or    // ∨ \/ ||
	Implies
	Eq     // = ==
	Neq    // ≠ !=
	Lt     // <
	Le     // ≤ <=
	Gt     // >
	Ge     // ≥ >=
	Empty  // ∅
	Forall // ∀ forall
	Exists // ∃ exists
	Unique // ∃! exists!
	In     // ∈ in
	NotIn  // ∉
	True   // ⊤ true
	False  // ⊥ false
)

var kindNames = [...]string{
	EOF: "end of formula", Illegal: "illegal character", Ident: "identifier", Number: "number",
	String: "string", LParen: "'('", RParen: "')'", LBrace: "'{'", RBrace: "'}'",
	LBracket: "'['", RBracket: "']'", Comma: "','", Dot: "'.'", Colon: "':'", Bar: "'|'",
	Not: "'¬'", And: "'∧'", Or: "'∨'", Implies: "'→'", Eq: "'='", Neq: "'≠'", Lt: "'<'",
	Le: "'≤'", Gt: "'>'", Ge: "'≥'", Empty: "'∅'", Forall: "'∀'", Exists: "'∃'",
	Unique: "'∃!'", In: "'∈'", NotIn: "'∉'", True: "'⊤'", False: "'⊥'",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Token is one lexeme with its byte range in the source.
type Token struct {
	Kind  Kind
	Text  string // the source text (for String, the unquoted value)
	Start int    // byte offset of the first byte
	End   int    // byte offset after the last byte
	// Attached is true when no white space separates this token from the
	// previous one. A field access dot is attached on both sides (r.severity);
	// a quantifier's dot is not (∃ r ∈ residuals . φ).
	Attached bool
}

// Scanner produces tokens from a formula.
type Scanner struct {
	src     string
	off     int
	lastEnd int
	err     string // message of the last Illegal token
}

// New returns a scanner over src.
func New(src string) *Scanner { return &Scanner{src: src, lastEnd: -1} }

// Err returns the message that goes with the last Illegal token.
func (s *Scanner) Err() string { return s.err }

// Reset moves the scanner back to off (the Start of a token it returned).
func (s *Scanner) Reset(off int) { s.off = off; s.lastEnd = -1 }

// words maps keyword spellings to operator kinds. Temporal operators and other
// keywords stay Ident; the parser knows them.
var words = map[string]Kind{
	"not": Not, "and": And, "or": Or, "forall": Forall, "exists": Exists,
	"in": In, "true": True, "false": False, "implies": Implies,
}

// symbols lists operator spellings, longest first where prefixes overlap.
var symbols = []struct {
	text string
	kind Kind
}{
	{"exists!", Unique}, {"∃!", Unique},
	{"->", Implies}, {"=>", Implies}, {"/\\", And}, {"\\/", Or}, {"&&", And}, {"||", Or},
	{"!=", Neq}, {">=", Ge}, {"<=", Le}, {"==", Eq},
	{"→", Implies}, {"⇒", Implies}, {"∧", And}, {"∨", Or}, {"¬", Not}, {"≠", Neq},
	{"≥", Ge}, {"≤", Le}, {"∅", Empty}, {"∀", Forall}, {"∃", Exists}, {"∈", In},
	{"∉", NotIn}, {"⊤", True}, {"⊥", False},
	{"!", Not}, {"=", Eq}, {"<", Lt}, {">", Gt}, {"(", LParen}, {")", RParen},
	{"{", LBrace}, {"}", RBrace}, {"[", LBracket}, {"]", RBracket}, {",", Comma},
	{".", Dot}, {":", Colon}, {"|", Bar},
}

// Next returns the next token.
func (s *Scanner) Next() Token {
	ws := s.skipSpace()
	start := s.off
	attached := !ws && s.lastEnd == start
	tok := s.next()
	tok.Start, tok.End, tok.Attached = start, s.off, attached
	s.lastEnd = s.off
	return tok
}

func (s *Scanner) skipSpace() bool {
	skipped := false
	for s.off < len(s.src) {
		r, n := utf8.DecodeRuneInString(s.src[s.off:])
		if !unicode.IsSpace(r) {
			break
		}
		s.off += n
		skipped = true
	}
	return skipped
}

func (s *Scanner) next() Token {
	if s.off >= len(s.src) {
		return Token{Kind: EOF}
	}
	rest := s.src[s.off:]
	r, n := utf8.DecodeRuneInString(rest)
	switch {
	case r == utf8.RuneError && n == 1:
		s.off++
		s.err = "invalid UTF-8"
		return Token{Kind: Illegal, Text: rest[:1]}
	case isIdentStart(r):
		// "exists!" is one token.
		if strings.HasPrefix(rest, "exists!") {
			s.off += len("exists!")
			return Token{Kind: Unique, Text: "exists!"}
		}
		end := 0
		for end < len(rest) {
			r, n := utf8.DecodeRuneInString(rest[end:])
			if !isIdentPart(r) {
				break
			}
			end += n
		}
		s.off += end
		text := rest[:end]
		if k, ok := words[text]; ok {
			return Token{Kind: k, Text: text}
		}
		return Token{Kind: Ident, Text: text}
	case r >= '0' && r <= '9':
		return s.number(rest)
	case r == '"' || r == '\'':
		return s.str(rest, r)
	}
	for _, sym := range symbols {
		if strings.HasPrefix(rest, sym.text) {
			s.off += len(sym.text)
			return Token{Kind: sym.kind, Text: sym.text}
		}
	}
	s.off += n
	s.err = fmt.Sprintf("unexpected character %q", r)
	return Token{Kind: Illegal, Text: rest[:n]}
}

func (s *Scanner) number(rest string) Token {
	end, dot := 0, false
	for end < len(rest) {
		c := rest[end]
		if c >= '0' && c <= '9' {
			end++
			continue
		}
		// A dot followed by a digit continues the number.
		if c == '.' && !dot && end+1 < len(rest) && rest[end+1] >= '0' && rest[end+1] <= '9' {
			dot = true
			end++
			continue
		}
		break
	}
	s.off += end
	return Token{Kind: Number, Text: rest[:end]}
}

func (s *Scanner) str(rest string, quote rune) Token {
	var b strings.Builder
	i := 1
	for i < len(rest) {
		c := rest[i]
		switch {
		case rune(c) == quote:
			s.off += i + 1
			return Token{Kind: String, Text: b.String()}
		case c == '\\' && i+1 < len(rest):
			switch e := rest[i+1]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
			i += 2
		case c == '\n':
			i = len(rest)
		default:
			b.WriteByte(c)
			i++
		}
	}
	s.off += len(rest)
	s.err = "unterminated string"
	return Token{Kind: Illegal, Text: rest}
}

// RawUntilParen returns the text from the current offset up to (not
// including) the ')' that closes the call whose '(' was just read, leaving the
// scanner on that ')'. Nested parentheses are kept. ok is false when the text
// ends first.
func (s *Scanner) RawUntilParen() (raw string, start int, ok bool) {
	start = s.off
	depth := 0
	for i := s.off; i < len(s.src); i++ {
		switch s.src[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				s.off = i
				s.lastEnd = -1
				return s.src[start:i], start, true
			}
			depth--
		}
	}
	return s.src[start:], start, false
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
