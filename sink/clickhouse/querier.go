package clickhouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Querier reads the server with parameterised statements; it is the
// method set the query service asks of a store (query/api.Querier).
type Querier struct{ Conn driver.Conn }

// rowFormats are the output formats a Querier writes: ClickHouse's row
// formats, which the server writes row by row (formatRow), and their
// WithNames forms, whose first line is the columns' names.
var rowFormats = map[string]bool{
	"JSONEachRow": true, "JSONCompactEachRow": true, "JSONStringsEachRow": true,
	"TabSeparated": true, "TSV": true, "TabSeparatedRaw": true, "CSV": true,
	"CustomSeparated": true,
}

// RowFormat splits format into the row format the server writes and
// whether a line of names comes first (the WithNames forms of
// TabSeparated, TSV and CSV); an error names the formats it takes.
func RowFormat(format string) (row string, names bool, err error) {
	if format == "" {
		format = "TabSeparated"
	}
	row, names = strings.CutSuffix(format, "WithNames")
	if rowFormats[row] && (!names || row == "TabSeparated" || row == "TSV" || row == "CSV") {
		return row, names, nil
	}
	return "", false, fmt.Errorf("output format %q: a ClickHouse server is read in row formats only (JSONEachRow, JSONCompactEachRow, JSONStringsEachRow, TabSeparated, TSV, TabSeparatedRaw, CSV, CustomSeparated, and TabSeparatedWithNames, TSVWithNames, CSVWithNames)", format)
}

// Wrap is the statement that has the server write each row of sql in the
// row format: one String column, each value a row as the format writes
// it. sql goes on lines of its own, so that a comment at its end ends
// there; a semicolon at its end is dropped.
func Wrap(sql, row string) string {
	sql = strings.TrimSuffix(strings.TrimSpace(sql), ";")
	return "SELECT formatRow('" + row + "', *) FROM (\n" + sql + "\n)"
}

// Describe is the statement that names sql's columns, in order.
func Describe(sql string) string {
	return "DESCRIBE (\n" + strings.TrimSuffix(strings.TrimSpace(sql), ";") + "\n)"
}

// Query runs sql with params as server-side query parameters
// ({name:Type} in sql) and returns its answer in format (RowFormat).
func (q Querier) Query(ctx context.Context, sql string, params map[string]string, format string) ([]byte, error) {
	row, names, err := RowFormat(format)
	if err != nil {
		return nil, err
	}
	if len(params) > 0 {
		ctx = ch.Context(ctx, ch.WithParameters(ch.Parameters(params)))
	}
	var out bytes.Buffer
	if names {
		cols, err := q.strings(ctx, Describe(sql))
		if err != nil {
			return nil, err
		}
		out.WriteString(HeaderLine(row, cols))
	}
	rows, err := q.strings(ctx, Wrap(sql, row))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out.WriteString(r)
	}
	return out.Bytes(), nil
}

// strings runs stmt and returns the first column of each row.
func (q Querier) strings(ctx context.Context, stmt string) ([]string, error) {
	rows, err := q.Conn.Query(ctx, stmt)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	cols := rows.ColumnTypes()
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = new(string)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, *dest[0].(*string))
	}
	return out, rows.Err()
}

// HeaderLine is the line of column names that the WithNames form of row
// (TabSeparated, TSV or CSV) writes first.
func HeaderLine(row string, names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		if row == "CSV" {
			quoted[i] = `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
		} else {
			quoted[i] = tsvEscaper.Replace(n)
		}
	}
	sep := "\t"
	if row == "CSV" {
		sep = ","
	}
	return strings.Join(quoted, sep) + "\n"
}

// tsvEscaper escapes a value as TabSeparated writes it.
var tsvEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\x00", `\0`, "\b", `\b`, "\f", `\f`)

// IsServerError reports whether err is the server's refusal of a
// statement (a ClickHouse exception: a syntax error, an unknown table, a
// statement the user may not run), not a failure to reach it.
func IsServerError(err error) bool {
	var ex *ch.Exception
	return errors.As(err, &ex)
}
