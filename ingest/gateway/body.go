package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ponens/ponens/schema"
)

// item is one event of the body, as bytes, and what is wrong with it.
type item struct {
	line, col int // where it starts in the body, 1-based
	index     int // its position among the body's events
	raw       []byte
	err       schema.DecodeErrors // located in the body; nil while it is fine
	status    string              // its EventResult.Status once known
}

// expectedBody is what a body must be, for messages.
const expectedBody = "an event object, an array of them, or JSON lines"

// split cuts the body into its events. It returns a problem instead when
// the body is not JSON at all.
func split(data []byte, jsonLines bool, maxEvent int) ([]item, *schema.FieldError) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &schema.FieldError{Err: schema.ErrMalformedJSON, Expected: expectedBody, Got: "an empty body"}
	}
	notJSON := &schema.FieldError{Err: schema.ErrMalformedJSON, Expected: expectedBody, Got: describe(trimmed)}
	if jsonLines {
		items := splitLines(data, maxEvent)
		for _, it := range items {
			if c := bytes.TrimLeft(it.raw, " \t")[0]; c == '{' || c == '[' {
				return items, nil
			}
		}
		return nil, notJSON
	}
	switch trimmed[0] {
	case '[':
		return splitArray(data, maxEvent), nil
	case '{':
		if json.Valid(data) {
			return []item{sized(item{line: 1, col: 1, raw: data}, maxEvent)}, nil
		}
		// Several objects, one per line, sent as application/json.
		first, rest, _ := bytes.Cut(trimmed, []byte("\n"))
		if json.Valid(first) && len(bytes.TrimSpace(rest)) > 0 {
			return splitLines(data, maxEvent), nil
		}
		return []item{sized(item{line: 1, col: 1, raw: data}, maxEvent)}, nil
	}
	return nil, notJSON
}

// splitLines cuts JSON lines into events, skipping blank lines.
func splitLines(data []byte, maxEvent int) []item {
	var items []item
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		items = append(items, sized(item{line: n, col: 1, index: len(items), raw: line}, maxEvent))
	}
	return items
}

// splitArray cuts a JSON array into its elements. Where the array breaks,
// the rest of the body becomes one malformed item.
func splitArray(data []byte, maxEvent int) []item {
	dec := json.NewDecoder(bytes.NewReader(data))
	_, _ = dec.Token() // the '[' split saw
	var items []item
	broken := func(off int, got string) []item {
		it := item{index: len(items), raw: data[min(off, len(data)):]}
		it.line, it.col = lineCol(data, off)
		it.err = located(it.line, it.col, &schema.FieldError{Err: schema.ErrMalformedJSON, Got: got})
		return append(items, it)
	}
	for dec.More() {
		off := skipSeparators(data, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) {
				return broken(off, fmt.Sprintf("%s (at line %d)", syntax.Error(), lineOf(data, int(syntax.Offset)-1)))
			}
			return broken(off, err.Error())
		}
		it := item{index: len(items), raw: raw}
		it.line, it.col = lineCol(data, off)
		items = append(items, sized(it, maxEvent))
	}
	off := skipSeparators(data, int(dec.InputOffset()))
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return broken(off, "the array does not end with ]")
	}
	if end := skipSeparators(data, int(dec.InputOffset())); end < len(data) {
		return broken(end, "unexpected data after the array")
	}
	return items
}

// skipSeparators skips white space and a comma from off.
func skipSeparators(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
		off++
	}
	return off
}

// sized marks an item over maxEvent bytes too large.
func sized(it item, maxEvent int) item {
	if len(it.raw) > maxEvent {
		it.err = located(it.line, it.col, &schema.FieldError{Err: schema.ErrTooLarge,
			Expected: fmt.Sprintf("an event of at most %d bytes", maxEvent), Got: fmt.Sprintf("%d bytes", len(it.raw))})
	}
	return it
}

// located places fe in the body at line:col.
func located(line, col int, fe *schema.FieldError) schema.DecodeErrors {
	msg := strings.TrimPrefix(fe.Error(), fe.Field+": ")
	if fe.Field == "" {
		msg = fe.Error()
	}
	return schema.DecodeErrors{{File: inputName, Line: line, Col: col, Field: fe.Field, Msg: msg, Err: fe}}
}

// relocate places an error about the item's bytes in the body: the
// positions of schema.DecodeEvent's errors are within the item. Other
// errors (from publishing) are placed at the item's start.
func (it *item) relocate(err error) schema.DecodeErrors {
	var errs schema.DecodeErrors
	if errors.As(err, &errs) {
		out := make(schema.DecodeErrors, len(errs))
		for i, e := range errs {
			c := *e
			if c.Line <= 1 {
				c.Line, c.Col = it.line, it.col+max(c.Col, 1)-1
			} else {
				c.Line += it.line - 1
			}
			out[i] = &c
		}
		return out
	}
	var fe *schema.FieldError
	if errors.As(err, &fe) {
		return located(it.line, it.col, fe)
	}
	return schema.DecodeErrors{{File: inputName, Line: it.line, Col: it.col, Msg: err.Error(), Err: err}}
}

// problems lists what is wrong with the item, for the response.
func (it *item) problems() []Problem {
	out := make([]Problem, len(it.err))
	for i, e := range it.err {
		out[i] = Problem{Line: e.Line, Column: e.Col, Index: it.index, Field: e.Field, Reason: schema.DeadLetterReason(e), Error: e.Msg}
	}
	return out
}

// sortProblems orders problems by position in the body.
func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Index, b.Index))
	})
}

// lineCol converts a byte offset in data to a 1-based line and column.
func lineCol(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	return bytes.Count(before, []byte("\n")) + 1, off - bytes.LastIndexByte(before, '\n')
}

// lineOf is the line of a byte offset.
func lineOf(data []byte, off int) int {
	line, _ := lineCol(data, off)
	return line
}

// describe quotes the start of a body that is not JSON.
func describe(b []byte) string {
	const n = 24
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:n])) + "…"
}
