package schema

import (
	"bytes"
	"encoding/json"
)

// Decode decodes a trace file of either form; name is the file name used in
// errors. A document that is one JSON object with an "actions" member is a
// reference trace (DecodeReference); so is a document whose first line is a
// lone "{", which no event stream starts with, so that a broken
// pretty-printed trace gets the reference decoder's errors. Anything else is
// an event stream (DecodeJSONL, with maxLine).
func Decode(name string, data []byte, maxLine int) ([]Event, error) {
	if IsReference(data) {
		return DecodeReference(name, data)
	}
	return DecodeJSONL(name, bytes.NewReader(data), maxLine)
}

// IsReference reports whether data holds a reference trace rather than an
// event stream, as Decode tells them apart.
func IsReference(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return false
	}
	first, _, _ := bytes.Cut(trimmed, []byte("\n"))
	if string(bytes.TrimSpace(first)) == "{" {
		return true
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return false
	}
	_, ok := top["actions"]
	return ok
}
