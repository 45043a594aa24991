package policymd

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Eval reports whether the condition holds for in. A nil condition, like an
// omitted one, holds for every intent; so does a Condition with none of its
// fields set. An empty And holds, an empty Or does not.
func (c *Condition) Eval(in *Intent) bool {
	switch {
	case c == nil:
		return true
	case c.Field != nil:
		return c.Field.Eval(in)
	case c.And != nil:
		for _, sub := range c.And {
			if !sub.Eval(in) {
				return false
			}
		}
		return true
	case c.Or != nil:
		for _, sub := range c.Or {
			if sub.Eval(in) {
				return true
			}
		}
		return false
	case c.Not != nil:
		return !c.Not.Eval(in)
	}
	return true
}

// Eval reports whether the field condition holds for in (seed 004 §2
// "Operators"):
//
//   - eq: the field is defined and strictly equal to Value: no type coercion
//     ("1" is not 1), numbers compare by value (1 equals 1.0), arrays and
//     objects compare element by element; neq is its negation, so an
//     undefined field is neq every value.
//   - gt, gte, lt, lte: both sides are numbers and compare so; anything else
//     is false.
//   - includes: the field is an array with an element equal to Value, or a
//     string containing Value, which must then be a string.
//   - in: the field is defined and equal to an element of Values; notIn is its
//     negation.
//   - exists: the field is defined and not null; notExists is its negation.
//   - wildcard: always true.
//
// An unknown operator, and an operator without the value or values it needs,
// is false.
func (f *FieldCondition) Eval(in *Intent) bool {
	if f.Op == OpWildcard {
		return true
	}
	got, ok := in.Resolve(f.Path)
	switch f.Op {
	case OpExists:
		return ok && got != nil
	case OpNotExists:
		return !ok || got == nil
	case OpEq:
		return f.HasValue && ok && equal(got, f.Value)
	case OpNeq:
		return f.HasValue && !(ok && equal(got, f.Value))
	case OpGt, OpGte, OpLt, OpLte:
		a, aok := number(got)
		b, bok := number(f.Value)
		if !ok || !aok || !bok {
			return false
		}
		switch f.Op {
		case OpGt:
			return a > b
		case OpGte:
			return a >= b
		case OpLt:
			return a < b
		default:
			return a <= b
		}
	case OpIncludes:
		return f.HasValue && ok && includes(got, f.Value)
	case OpIn:
		return f.HasValues && ok && member(got, f.Values)
	case OpNotIn:
		return f.HasValues && !(ok && member(got, f.Values))
	}
	return false
}

// includes reports whether got, an array or a string, includes want.
func includes(got, want any) bool {
	switch g := normalizeShallow(got).(type) {
	case string:
		w, ok := normalizeShallow(want).(string)
		return ok && strings.Contains(g, w)
	case []any:
		return member(want, g)
	}
	return false
}

// member reports whether v equals an element of list.
func member(v any, list []any) bool {
	for _, e := range list {
		if equal(v, e) {
			return true
		}
	}
	return false
}

// number returns v as a float64 when it is a number.
func number(v any) (float64, bool) {
	f, ok := normalizeShallow(v).(float64)
	return f, ok
}

// equal is strict equality over JSON-like values: same kind, and equal
// numbers, strings, booleans, or arrays and objects with equal elements.
func equal(a, b any) bool {
	a, b = normalizeShallow(a), normalizeShallow(b)
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// normalizeShallow maps a Go value onto the JSON-like kinds at its top
// level: every number becomes float64, a json.Number its float64 (or string
// when it does not parse), a pointer its target, other slices []any and
// string-keyed maps map[string]any. Other values are returned unchanged.
func normalizeShallow(v any) any {
	switch x := v.(type) {
	case nil, bool, string, float64, []any, map[string]any:
		return v
	case int:
		return float64(x)
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case uintptr:
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		// Follow a bounded chain of pointers, so that a pointer cycle
		// cannot loop.
		for range 16 {
			if rv.IsNil() {
				return nil
			}
			rv = rv.Elem()
			if k := rv.Kind(); k != reflect.Pointer && k != reflect.Interface {
				return normalizeShallow(rv.Interface())
			}
		}
		return v
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v
		}
		if rv.IsNil() {
			return nil
		}
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			out[iter.Key().String()] = iter.Value().Interface()
		}
		return out
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	}
	return v
}
