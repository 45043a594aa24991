package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestDuplicateKeys: an event with a key twice in one object is refused
// with the position of the repeat and the path, not read as its last value.
func TestDuplicateKeys(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"type", `{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"action","action":{"id":1,"type":"GitCommit","type":"EditFile"}}`,
			`e:1:108: action.type: duplicate key: expected each key once in an object (keys are matched ignoring case), got "type" again, first at line 1, column 89`},
		{"case", `{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{},"Type":"run.finish"}`,
			`e:1:86: Type: duplicate key: expected each key once in an object (keys are matched ignoring case), got "Type" again, first at line 1, column 56`},
		{"payload", `{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"action","action":{"id":1,"type":"Write","request":{"files":[{"path":"a"},{"path":"b","pa\u0074h":".env"}]}}}`,
			`action.request.files[1].path: duplicate key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEvent("e", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrDuplicateKey) {
				t.Errorf("error %v\nwant %s", err, tc.want)
			}
		})
	}
	ok := `{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"action","action":{"id":1,"type":"W","request":{"a":{"x":1},"b":{"x":2},"c":["x","x"],"d":"\"x\":1,\"x\""}}}`
	if _, err := DecodeEvent("e", []byte(ok)); err != nil {
		t.Errorf("unique keys refused: %v", err)
	}
}

// duplicateKeyReference finds a repeated key (ignoring case) with
// encoding/json's tokenizer: what duplicateKey must agree with.
func duplicateKeyReference(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		keys   []string
		expect bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, expect: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expect {
				top := stack[n-1]
				for _, k := range top.keys {
					if strings.EqualFold(k, v) {
						return true
					}
				}
				top.keys = append(top.keys, v)
				top.expect = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expect = true // a value ended: a key comes next
		}
	}
}

// FuzzDuplicateKeys: on well-formed JSON, the scanner finds a repeated key
// exactly when encoding/json's tokenizer does, scanShape's filter lets
// every such repeat through and reports one exactly so when no key has an
// escape sequence; neither panics on anything.
func FuzzDuplicateKeys(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _, got := duplicateKey(data)
		deep, maybe := scanShape(data)
		if !json.Valid(data) || deep {
			return
		}
		if want := duplicateKeyReference(data); got != want {
			t.Fatalf("duplicateKey = %v, encoding/json finds %v, on %q", got, want, data)
		}
		if got && !maybe || maybe && !got && bytes.IndexByte(data, '\\') < 0 {
			t.Fatalf("scanShape dup = %v, duplicateKey %v, on %q", maybe, got, data)
		}
	})
}

// TestLongValueCut: an error about a huge value quotes its start, not the
// whole input.
func TestLongValueCut(t *testing.T) {
	data := `{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"` + strings.Repeat("x", 100_000) + `"}`
	_, err := DecodeEvent("e", []byte(data))
	if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "more bytes)") {
		t.Errorf("error of %d bytes: %.300s", len(err.Error()), err)
	}
}
