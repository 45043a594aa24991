package analytics

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ponens/ponens/sink/clickhouse"
)

// serverFormats maps each output format to what a ClickHouse server is
// asked for: a server writes row formats only (clickhouse.RowFormat), so a
// table is drawn here from its TabSeparatedWithNames answer.
var serverFormats = map[string]string{
	"table": "TabSeparatedWithNames",
	"json":  "JSONEachRow",
	"csv":   "CSVWithNames",
}

// QueryServer runs sql on a ClickHouse server through q and returns the
// answer in format (a key of Formats). What runs is the one SELECT the
// server's parser reads sql as (Statement).
func QueryServer(ctx context.Context, q clickhouse.Querier, sql, format string) ([]byte, error) {
	f, ok := serverFormats[format]
	if !ok {
		return nil, fmt.Errorf("--format: must be %s, got %q", FormatNames, format)
	}
	sql = strings.TrimSpace(sql)
	if sql == "" {
		return nil, fmt.Errorf("no SQL given")
	}
	if err := QueryOnly(sql); err != nil {
		return nil, err
	}
	stmt, err := Statement(ctx, q, sql)
	if err != nil {
		return nil, err
	}
	out, err := q.Query(ctx, stmt, nil, f)
	if err != nil || format != "table" {
		return out, err
	}
	return []byte(Table(string(out))), nil
}

// Table draws a TabSeparatedWithNames answer as a table in the frame of
// the embedded engine's tables: a header of names, then one line per row,
// each value as the answer escapes it.
func Table(tsv string) string {
	lines := strings.Split(strings.TrimSuffix(tsv, "\n"), "\n")
	var rows [][]string
	for _, l := range lines {
		rows = append(rows, strings.Split(l, "\t"))
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(c))
			}
		}
	}
	var b strings.Builder
	edge := func(left, mid, right string, names []string) {
		b.WriteString(left)
		for i, w := range width {
			if i > 0 {
				b.WriteString(mid)
			}
			n := ""
			if names != nil {
				n = names[i]
			}
			b.WriteString("─" + n + strings.Repeat("─", w-utf8.RuneCountInString(n)+1))
		}
		b.WriteString(right + "\n")
	}
	edge("┌", "┬", "┐", rows[0])
	for _, r := range rows[1:] {
		for i, w := range width {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			b.WriteString("│ " + c + strings.Repeat(" ", w-utf8.RuneCountInString(c)+1))
		}
		b.WriteString("│\n")
	}
	edge("└", "┴", "┘", nil)
	return b.String()
}
