package chdb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"unsafe"
)

// paramName is what a query parameter's name may be: the names of
// ClickHouse's {name:Type} placeholders.
var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// QueryParams runs one read statement whose values are ClickHouse query
// parameters: the SQL names them as {name:Type} and params gives each
// name's value, which the engine parses as a value of Type and never as
// SQL (chdb_query_with_params_n). A value is any string, NUL and invalid
// UTF-8 included: it is passed with its length, escaped as the engine's
// escaped text format reads it, so that it arrives unchanged. The context
// is checked before the call; the engine cannot cancel a query it runs.
func (e *Engine) QueryParams(ctx context.Context, sql string, params map[string]string, format string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if sql == "" {
		return nil, errors.New("chdb: empty query")
	}
	if format == "" {
		format = "TabSeparated"
	}
	names := make([]string, 0, len(params))
	for n := range params {
		if !paramName.MatchString(n) {
			return nil, fmt.Errorf("chdb: query parameter name %q: expected letters, digits and _", n)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	// One buffer holds every name and value; the pointers point into it.
	var buf []byte
	offs := make([][2]int, 0, 2*len(names))
	for _, n := range names {
		start := len(buf)
		buf = append(buf, n...)
		offs = append(offs, [2]int{start, len(buf)})
		start = len(buf)
		buf = append(buf, EscapeParam(params[n])...)
		offs = append(offs, [2]int{start, len(buf)})
	}
	buf = append(buf, 0) // never empty, so &buf[0] exists
	count := len(names)
	ptrs := make([]*byte, 2*count+2)
	lens := make([]uintptr, 2*count+2)
	for i, o := range offs {
		// names at [0,count), values at [count+1, 2count+1)
		j := i / 2
		if i%2 == 1 {
			j += count + 1
		}
		ptrs[j], lens[j] = &buf[o[0]], uintptr(o[1]-o[0])
		if o[0] == o[1] {
			ptrs[j] = &buf[len(buf)-1]
		}
	}
	q := []byte(sql)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refs == 0 {
		return nil, ErrClosed
	}
	res := e.api.queryParamsN(*e.handle, &q[0], uintptr(len(q)), format, uintptr(len(format)),
		&ptrs[0], &lens[0], &ptrs[count+1], &lens[count+1], uintptr(count))
	runtime.KeepAlive(q)
	runtime.KeepAlive(buf)
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(lens)
	return e.takeResult(res)
}

// takeResult copies a result's bytes, or returns its error, and frees it.
func (e *Engine) takeResult(res uintptr) ([]byte, error) {
	if res == 0 {
		return nil, errors.New("chdb: the engine returned no result")
	}
	defer e.api.destroyResult(res)
	if msg := e.api.resultError(res); msg != "" {
		return nil, &QueryError{Msg: strings.TrimSpace(msg)}
	}
	n := e.api.resultLength(res)
	if n == 0 {
		return nil, nil
	}
	return append([]byte(nil), unsafe.Slice(e.api.resultBuffer(res), n)...), nil
}

// EscapeParam writes a parameter value as ClickHouse reads parameter
// values: in its escaped text format, where a backslash starts an escape.
// Backslash, tab, newline, carriage return and NUL are escaped; every other
// byte, invalid UTF-8 included, is passed as it is.
func EscapeParam(v string) string {
	if !strings.ContainsAny(v, "\\\t\n\r\x00") {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 8)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Querier reads the engine with parameterised statements; it is the
// method set the query service asks of a store.
type Querier struct{ E *Engine }

// Query runs sql with params (QueryParams) and returns its output in format.
func (q Querier) Query(ctx context.Context, sql string, params map[string]string, format string) ([]byte, error) {
	return q.E.QueryParams(ctx, sql, params, format)
}
