package analytics

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/ponens/ponens/sink/chdb"
)

// Formats maps each output format a user may ask for to ClickHouse's.
var Formats = map[string]string{
	"table": "PrettyCompactMonoBlock",
	"json":  "JSONEachRow",
	"csv":   "CSVWithNames",
}

// FormatNames lists the names of Formats, for help and errors.
const FormatNames = "table, json or csv"

// Open opens the embedded store read-only for queries: it migrates the
// schema, then makes the session read-only.
func Open(opts chdb.Options) (*chdb.Engine, error) {
	e, err := chdb.Open(opts)
	if err != nil {
		return nil, err
	}
	if _, err := chdb.Migrate(e); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.Exec("SET output_format_pretty_color = 0", "SET output_format_pretty_row_numbers = 0", "SET output_format_pretty_fallback_to_vertical = 0", "SET allow_introspection_functions = 0", "SET readonly = 1"); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Query runs sql on e, opened with Open, and returns the answer in format
// (a key of Formats). What runs is the one SELECT the engine's parser
// reads sql as (Statement); a table with no rows is its header.
func Query(e *chdb.Engine, sql, format string) ([]byte, error) {
	f, ok := Formats[format]
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
	stmt, err := Statement(context.Background(), chdb.Querier{E: e}, sql)
	if err != nil {
		return nil, err
	}
	out, err := e.Query([]byte(stmt), f)
	if err != nil || len(out) > 0 || format != "table" {
		return out, err
	}
	desc, err := e.Query([]byte("DESCRIBE ("+stmt+")"), "TabSeparated")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSuffix(string(desc), "\n"), "\n") {
		if name, _, _ := strings.Cut(l, "\t"); l != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	return []byte(Table(strings.Join(names, "\t") + "\n")), nil
}

// Wrap makes sql the subquery of a SELECT, on lines of its own so that a
// comment at its end ends there; a semicolon at its end (before comments
// only) is dropped. Read
// by the engine's parser as one statement (Statement), a statement that is
// not a query (INSERT, INSERT INTO FUNCTION, KILL, SYSTEM, SET) is a
// syntax error.
func Wrap(sql string) string {
	return "SELECT * FROM (\n" + dropFinalSemicolon(strings.TrimSpace(sql)) + "\n)"
}

// dropFinalSemicolon drops the last semicolon of sql when only spaces and
// comments follow it ("SELECT 1; -- done"), and nothing that could close a
// string it might be in (no quote).
func dropFinalSemicolon(sql string) string {
	i := strings.LastIndexByte(sql, ';')
	if i < 0 || strings.ContainsAny(sql[i:], "'\"`$") {
		return sql
	}
	rest := sql[i+1:]
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		switch {
		case rest == "":
			return sql[:i] + sql[i+1:]
		case strings.HasPrefix(rest, "--"), strings.HasPrefix(rest, "#"):
			_, rest, _ = strings.Cut(rest, "\n")
		case strings.HasPrefix(rest, "/*"):
			var ok bool
			if _, rest, ok = strings.Cut(rest, "*/"); !ok {
				return sql
			}
		default:
			return sql
		}
	}
}

// queryWords are the words a query may begin with.
var queryWords = map[string]bool{"SELECT": true, "WITH": true, "EXPLAIN": true, "FROM": true}

// NotQueryError refuses a statement that is not a query, naming its first
// word.
type NotQueryError struct {
	Word string
	Msg  string // what to say instead, when set
}

func (n *NotQueryError) Error() string {
	if n.Msg != "" {
		return n.Msg
	}
	switch n.Word {
	case "file()":
		return "a query here reads the store only: file() reads the files of the machine"
	case "SETTINGS":
		return "a query here has no SETTINGS clause: the store's settings (read-only among them) hold for every query"
	case "INTO OUTFILE":
		return "a query here has no INTO OUTFILE: the answer comes back on its own (ponens sql --format csv > FILE writes it to a file)"
	}
	msg := fmt.Sprintf("only a query runs here (SELECT, WITH or EXPLAIN), got %s", n.Word)
	switch n.Word {
	case "SHOW":
		msg += " (for SHOW TABLES: SELECT name FROM system.tables WHERE database = currentDatabase())"
	case "DESCRIBE", "DESC":
		msg += " (for DESCRIBE t: SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 't')"
	}
	return msg
}

// QueryOnly refuses sql, with a NotQueryError, when its first word (after
// comments and opening brackets) is not one a query begins with. It names
// the word for the user; Statement is what keeps other statements from
// running.
func QueryOnly(sql string) error {
	word := firstWord(sql)
	if queryWords[word] {
		return nil
	}
	if word == "" {
		word = fmt.Sprintf("%.10q", strings.TrimLeftFunc(sql, unicode.IsSpace))
	}
	return &NotQueryError{Word: word}
}

// firstWord is the first word of sql after comments and opening brackets,
// in upper case; "" when sql begins with something else.
func firstWord(sql string) string {
	s := sql
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(s, "--"), strings.HasPrefix(s, "#"):
			_, s, _ = strings.Cut(s, "\n")
		case strings.HasPrefix(s, "/*"):
			_, s, _ = strings.Cut(s, "*/")
		case strings.HasPrefix(s, "("):
			s = s[1:]
		default:
			end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })
			if end < 0 {
				end = len(s)
			}
			return strings.ToUpper(s[:end])
		}
	}
}
