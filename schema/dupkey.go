package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// checkDuplicateKeys returns the problem of the first repeated key in
// well-formed JSON data, or nil.
func checkDuplicateKeys(data []byte) []located {
	off, path, first, ok := duplicateKey(data)
	if !ok {
		return nil
	}
	line, col := lineCol(data, first)
	key := unquote(data[off : stringEnd(data, off)+1])
	return []located{{off, &FieldError{Field: path, Err: ErrDuplicateKey,
		Expected: "each key once in an object (keys are matched ignoring case)",
		Got:      fmt.Sprintf("%q again, first at line %d, column %d", key, line, col)}}}
}

// duplicateKey finds the first object member of well-formed JSON data whose
// key the same object already has: encoding/json would keep the last value
// silently, and an event read one way by ponens and another by an agent's
// tools is a policy-relevant ambiguity. Keys are compared ignoring case, as
// encoding/json matches them to fields. It returns the offset of the
// repeated key, its JSON path (as FieldError.Field writes paths) and the
// offset of the first one; ok is false when every key is unique.
func duplicateKey(data []byte) (off int, path string, first int, ok bool) {
	type frame struct {
		object bool
		index  int      // array: the element's index
		key    string   // object: the member's key
		keys   []string // object: the keys so far
		offs   []int    // their offsets
		expect bool     // object: a key comes next
	}
	var stack []frame
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, frame{object: true, expect: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].expect = true
				} else {
					stack[n-1].index++
				}
			}
		case '"':
			end := stringEnd(data, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expect {
				top := &stack[n-1]
				key := unquote(data[i : end+1])
				for j, k := range top.keys {
					if strings.EqualFold(k, key) {
						top.key = key
						return i, framePath(len(stack), func(d int) (bool, int, string) {
							return stack[d].object, stack[d].index, stack[d].key
						}), top.offs[j], true
					}
				}
				top.keys = append(top.keys, key)
				top.offs = append(top.offs, i)
				top.key, top.expect = key, false
			}
			i = end
		}
	}
	return 0, "", 0, false
}

// framePath writes the JSON path of the innermost of n frames.
func framePath(n int, frame func(int) (object bool, index int, key string)) string {
	var b bytes.Buffer
	for d := range n {
		object, index, key := frame(d)
		if !object {
			b.WriteString("[" + strconv.Itoa(index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
	}
	return b.String()
}

// stringEnd returns the offset of the quote closing the string that
// starts at data[start].
func stringEnd(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// unquote returns the value of a JSON string literal (the literal itself
// when it cannot be read, which well-formed JSON never gives).
func unquote(lit []byte) string {
	if len(lit) < 2 {
		return string(lit)
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return string(lit)
	}
	return s
}

// scanShape reads well-formed JSON data once, without allocating for
// what an event usually holds, and reports whether it nests arrays and
// objects more than maxDepth deep and whether an object may have a key
// twice (ignoring case, as duplicateKey compares them). A key written
// with an escape sequence counts as a possible repeat, since its value is
// not compared here: dup is a cheap filter, and duplicateKey, which
// unquotes every key, decides and places the repeat. On well-formed JSON
// a repeat duplicateKey finds always sets dup (FuzzDuplicateKeys).
func scanShape(data []byte) (deep, dup bool) {
	var keyBuf [32][2]int // the open objects' keys so far: start and end of their text
	var frameBuf [16]shapeFrame
	keys, stack := keyBuf[:0], frameBuf[:0]
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			if len(stack) == maxDepth {
				return true, dup
			}
			stack = append(stack, shapeFrame{object: data[i] == '{', expect: data[i] == '{', first: len(keys)})
		case '}', ']':
			if n := len(stack); n > 0 {
				keys = keys[:stack[n-1].first]
				stack = stack[:n-1]
			}
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expect = true
			}
		case '"':
			end := max(stringEnd(data, i), i+1) // i+1 past an unterminated quote at the end
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expect && !dup {
				key := data[i+1 : end]
				if bytes.IndexByte(key, '\\') >= 0 {
					dup = true
				}
				for _, k := range keys[stack[n-1].first:] {
					if bytes.EqualFold(data[k[0]:k[1]], key) {
						dup = true
						break
					}
				}
				keys = append(keys, [2]int{i + 1, end})
				stack[n-1].expect = false
			} else if n > 0 && stack[n-1].object {
				stack[n-1].expect = false
			}
			i = end
		}
	}
	return false, dup
}

// shapeFrame is an open array or object of scanShape.
type shapeFrame struct {
	object bool
	expect bool // object: a key comes next
	first  int  // object: its first key in scanShape's keys
}
