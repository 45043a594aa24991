package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Querier is what the service asks of a store: one read statement whose
// values are ClickHouse query parameters ({name:Type} in sql, each name's
// value in params), its output in a ClickHouse format (JSONEachRow,
// ArrowStream, …). The embedded engine (sink/chdb.Querier) and a
// ClickHouse server implement it; values never enter the SQL text.
type Querier interface {
	Query(ctx context.Context, sql string, params map[string]string, format string) ([]byte, error)
}

// errDeadline marks a query stopped by its deadline.
var errDeadline = context.DeadlineExceeded

// stmt builds one statement: SQL text written by this package, and every
// value from a request as a parameter named p0, p1, …
type stmt struct {
	b      strings.Builder
	params map[string]string
}

func newStmt(sql string) *stmt {
	s := &stmt{params: map[string]string{}}
	s.b.WriteString(sql)
	return s
}

// sql appends text written by this package (never a request's value).
func (s *stmt) sql(text string) *stmt {
	s.b.WriteString(text)
	return s
}

// arg returns the placeholder of a new parameter of ClickHouse type typ
// holding value.
func (s *stmt) arg(typ, value string) string {
	name := "p" + strconv.Itoa(len(s.params))
	s.params[name] = value
	return "{" + name + ":" + typ + "}"
}

// str is arg for a String.
func (s *stmt) str(value string) string { return s.arg("String", value) }

// ms is arg for a time as Unix milliseconds, read back as DateTime64(3).
func (s *stmt) ms(t time.Time) string {
	return "fromUnixTimestamp64Milli(" + s.arg("Int64", strconv.FormatInt(t.UnixMilli(), 10)) + ", 'UTC')"
}

// in is "IN (…)" over values as String parameters.
func (s *stmt) in(values []string) string {
	ph := make([]string, len(values))
	for i, v := range values {
		ph[i] = s.str(v)
	}
	return "IN (" + strings.Join(ph, ", ") + ")"
}

// run runs the statement on q in format.
func (s *stmt) run(ctx context.Context, q Querier, format string) ([]byte, error) {
	out, err := q.Query(ctx, s.b.String(), s.params, format)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %v", errDeadline, err)
		}
		return nil, err
	}
	return out, nil
}

// rows runs the statement and decodes each JSONEachRow line into a new T.
func rows[T any](ctx context.Context, q Querier, s *stmt) ([]T, error) {
	out, err := s.run(ctx, q, "JSONEachRow")
	if err != nil {
		return nil, err
	}
	var res []T
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("decoding a row of the store's answer: %w", err)
		}
		res = append(res, v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// msTime is a time the store gives as Unix milliseconds.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// timeText is a time as the API writes it: RFC 3339 in UTC, with
// milliseconds when it has them.
func timeText(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.999Z07:00") }

// ping asks the store for one row.
func ping(ctx context.Context, q Querier) error {
	out, err := q.Query(ctx, "SELECT 1", nil, "TabSeparated")
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "1" {
		return errors.New("the store answered SELECT 1 with " + strconv.Quote(string(out)))
	}
	return nil
}
