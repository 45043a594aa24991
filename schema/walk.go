package schema

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file finds things in JSON text on the error path: where a field's
// value starts (so that errors carry a line and column) and, for a document
// that encoding/json refused, every unknown member and wrongly typed value.

// visitFunc is called for each value the walker reaches, with its path, the
// Go type expected there (nil for a member the type does not define), the
// offsets where its member name (or, in an array, the value) and the value
// start, and its raw text (only the first byte for objects and arrays). It
// reports whether to walk into an object or array.
type visitFunc func(path string, t reflect.Type, keyOff, off int, raw []byte) bool

// walkJSON calls visit for the values of the well-formed JSON document data,
// in document order. t is the Go type of the document, or nil.
func walkJSON(data []byte, t reflect.Type, visit visitFunc) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// The document is well-formed, so the decoder cannot fail.
	_ = walkValue(dec, data, "", t, 0, visit)
}

func walkValue(dec *json.Decoder, data []byte, path string, t reflect.Type, keyOff int, visit visitFunc) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	off := valueStart(data, int(dec.InputOffset()))
	if c := data[off]; c != '{' && c != '[' {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		visit(path, t, keyOff, off, raw)
		return err
	}
	if !visit(path, t, keyOff, off, data[off:off+1]) {
		return dec.Decode(&json.RawMessage{})
	}
	open, err := dec.Token()
	if err != nil {
		return err
	}
	for i := 0; dec.More(); i++ {
		var child string
		var ct reflect.Type
		childOff := valueStart(data, int(dec.InputOffset()))
		if open == json.Delim('{') {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key := tok.(string)
			child = joinPath(path, key)
			if f, ok := jsonFields(t)[key]; ok {
				ct = f.Type
			}
		} else {
			child = path + "[" + strconv.Itoa(i) + "]"
			if t != nil {
				ct = t.Elem()
			}
		}
		if err := walkValue(dec, data, child, ct, childOff, visit); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// valueStart skips the white space and separators before the value that
// starts at or after off.
func valueStart(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
		off++
	}
	return off
}

// joinPath appends a member name to a path.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// locate returns, for each path, the offset in the well-formed JSON document
// data of the value at that path, or of its nearest enclosing value when the
// path is absent. It walks data once, into the values on the paths only.
func locate(data []byte, paths ...string) []int {
	onPath := map[string]bool{"": true}
	for _, p := range paths {
		for i := range len(p) {
			if p[i] == '.' || p[i] == '[' {
				onPath[p[:i]] = true
			}
		}
		onPath[p] = true
	}
	found := make(map[string]int)
	walkJSON(data, nil, func(p string, _ reflect.Type, _, off int, _ []byte) bool {
		if !onPath[p] {
			return false
		}
		if _, dup := found[p]; !dup {
			found[p] = off
		}
		return true
	})
	offs := make([]int, len(paths))
	for i, p := range paths {
		off, ok := found[p]
		for !ok {
			p = p[:max(strings.LastIndexAny(p, ".["), 0)]
			off, ok = found[p]
		}
		offs[i] = off
	}
	return offs
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
)

// located is a problem at a byte offset.
type located struct {
	off int
	err *FieldError
}

// diagnose lists the problems that make encoding/json refuse the
// well-formed document data as a t: members t does not define and values of
// the wrong type. Members of free-form fields (json.RawMessage, maps) are not
// checked.
func diagnose(data []byte, t reflect.Type) []located {
	var found []located
	walkJSON(data, t, func(path string, t reflect.Type, keyOff, off int, raw []byte) bool {
		if t == nil {
			found = append(found, located{keyOff, &FieldError{Field: path, Err: ErrUnknownField}})
			return false
		}
		if raw[0] == 'n' || t == rawMessageType || t.Kind() == reflect.Map {
			return false // null is accepted everywhere; free-form values are not checked
		}
		var ok bool
		switch t.Kind() {
		case reflect.Struct:
			if t == timeType {
				ok = json.Unmarshal(raw, new(time.Time)) == nil
			} else {
				ok = raw[0] == '{'
			}
		case reflect.Slice:
			ok = raw[0] == '['
		default:
			ok = json.Unmarshal(raw, reflect.New(t).Interface()) == nil
		}
		if !ok {
			found = append(found, located{off, &FieldError{Field: path, Err: ErrWrongType, Expected: describeType(t), Got: describeRaw(raw)}})
		}
		return ok
	})
	return found
}

// jsonFields maps the JSON member names of struct type t to its fields; it
// returns nil for other types. The map is made once per type (a reference
// trace asks it for every member of every action) and must not be changed.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	if t == nil || t.Kind() != reflect.Struct || t == timeType {
		return nil
	}
	if fields, ok := fieldsOf.Load(t); ok {
		return fields.(map[string]reflect.StructField)
	}
	fields := make(map[string]reflect.StructField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && name != "-" {
			fields[cmp.Or(name, f.Name)] = f
		}
	}
	fieldsOf.Store(t, fields)
	return fields
}

// fieldsOf caches jsonFields: reflect.Type → its map.
var fieldsOf sync.Map

// describeType says what JSON value a Go type takes, for "expected …".
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Struct:
		if t == timeType {
			return "an RFC 3339 timestamp"
		}
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "an object"
}

// describeRaw renders a JSON value for "got …": scalars as their (possibly
// shortened) text, objects and arrays by kind.
func describeRaw(raw []byte) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	const max = 64
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}
