package clickhouse

import (
	"strings"
	"testing"
)

// The statements the query service and users run.
var oracleQueries = []string{
	"SELECT 1",
	"SELECT number AS n, toString(number) AS s, 'a\tb\\c\"d' AS `odd name`, toDateTime64(number, 3, 'UTC') AS t FROM numbers(4) ORDER BY n DESC",
	"WITH 2 AS k SELECT k, [1, 2] AS a, map('x', 1) AS m, NULL AS z;",
	"SELECT rule_id, count() AS c FROM verdicts GROUP BY rule_id ORDER BY rule_id -- a comment at the end",
	"SELECT run_id FROM events WHERE 0",
}

// What the server writes for a wrapped statement (formatRow of each row,
// the names from DESCRIBE) is, byte for byte, what the embedded engine
// writes for the statement in the format: the query service reads the
// same answer from either store.
func TestWrapWritesTheFormat(t *testing.T) {
	for _, format := range []string{"JSONEachRow", "JSONCompactEachRow", "TabSeparated", "CSV", "CSVWithNames", "TabSeparatedWithNames"} {
		for _, sql := range oracleQueries {
			want, err := engine.Query([]byte(strings.TrimSuffix(strings.TrimSpace(sql), ";")+"\n"), format)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			row, names, err := RowFormat(format)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			if names {
				out, err := engine.Query([]byte(Describe(sql)), "TabSeparated")
				if err != nil {
					t.Fatalf("%s: %v", Describe(sql), err)
				}
				var cols []string
				for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					name, _, _ := strings.Cut(l, "\t")
					cols = append(cols, strings.NewReplacer(`\t`, "\t", `\\`, `\`).Replace(name))
				}
				got.WriteString(HeaderLine(row, cols))
			}
			out, err := engine.Query([]byte(Wrap(sql, row)), "RawBLOB")
			if err != nil {
				t.Fatalf("%s: %v", Wrap(sql, row), err)
			}
			got.Write(out)
			if got.String() != string(want) {
				t.Errorf("%s, %s:\nwrapped: %q\nengine:  %q", format, sql, got.String(), want)
			}
		}
	}
}

// A block format cannot be written row by row: the error names the
// formats a server is read in.
func TestRowFormatRefuses(t *testing.T) {
	for _, f := range []string{"ArrowStream", "PrettyCompact", "JSON", "JSONEachRowWithNames", "Parquet"} {
		if _, _, err := RowFormat(f); err == nil || !strings.Contains(err.Error(), "row formats only") || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: got %v", f, err)
		}
	}
	if row, names, err := RowFormat(""); row != "TabSeparated" || names || err != nil {
		t.Errorf("the default: %s %v %v", row, names, err)
	}
}
