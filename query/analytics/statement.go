package analytics

import (
	"context"
	"fmt"
	"strings"
)

// Querier runs a parameterised query on a store (chdb.Querier,
// clickhouse.Querier).
type Querier interface {
	Query(ctx context.Context, sql string, params map[string]string, format string) ([]byte, error)
}

// Statement is the one statement that runs for the user's sql: the store's
// own parser reads it and prints it back on one line
// (formatQuerySingleLine, given the text as a query parameter, so that
// nothing of it runs). A query is read as Wrap(sql), the subquery of a
// SELECT; an EXPLAIN is read as it stands and must print back as one. The
// parser refuses more than one statement, so a bracket in sql that closes
// the subquery early cannot start a second one; and what it printed begins
// with the SELECT of Wrap or with EXPLAIN. INTO OUTFILE, SETTINGS and file() outside
// a string are refused (a *NotQueryError): the first writes a file, the
// second could lift the store's read-only setting for the query, and the
// function file(), which read-only lets through, reads any file of the
// machine. When the parser refuses the wrapped text, the user's text is
// read alone: its own error then comes back, at positions in the user's
// text, or the clause it holds that a subquery cannot (INTO OUTFILE); an
// error of the parser comes back as the store's error, without the text
// of the formatQuerySingleLine call around it.
func Statement(ctx context.Context, q Querier, sql string) (string, error) {
	alone := dropFinalSemicolon(strings.TrimSpace(sql))
	text, prefix := Wrap(sql), "SELECT "
	if firstWord(sql) == "EXPLAIN" {
		text, prefix = alone, "EXPLAIN "
	}
	stmt, err := printed(ctx, q, text)
	if err != nil && text != alone {
		own, ownErr := printed(ctx, q, alone)
		switch {
		case ownErr != nil:
			err = ownErr
		case forbiddenClause(own) != "":
			return "", &NotQueryError{Word: forbiddenClause(own)}
		}
	}
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(stmt, prefix) || strings.Contains(stmt, "\n") {
		return "", &NotQueryError{Word: strings.TrimSpace(prefix), Msg: fmt.Sprintf("the store's parser read the query as %.60q, which is not one %s (an EXPLAIN runs on its own, not in brackets)", stmt, strings.TrimSpace(prefix))}
	}
	if word := forbiddenClause(stmt); word != "" {
		return "", &NotQueryError{Word: word}
	}
	return stmt, nil
}

// printed is text as the store's parser prints it back, on one line.
func printed(ctx context.Context, q Querier, text string) (string, error) {
	out, err := q.Query(ctx, "SELECT formatQuerySingleLine({q:String})", map[string]string{"q": text}, "TSVRaw")
	if err != nil {
		return "", trimScope(err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// scopedError is a store error whose text ends with the call it arose in.
type scopedError struct {
	msg string
	err error
}

func (s *scopedError) Error() string { return s.msg }
func (s *scopedError) Unwrap() error { return s.err }

// trimScope drops ": In scope SELECT formatQuerySingleLine(…)" from a
// parser error: it quotes the wrapped text back, escaped, which says
// nothing the position does not.
func trimScope(err error) error {
	msg := err.Error()
	i := strings.Index(msg, ": In scope SELECT formatQuerySingleLine(")
	if i < 0 {
		return err
	}
	tail := msg[i:]
	if j := strings.LastIndex(tail, ". ("); j >= 0 {
		return &scopedError{msg: msg[:i] + tail[j:], err: err}
	}
	return &scopedError{msg: msg[:i], err: err}
}

// forbiddenClause returns "INTO OUTFILE", "SETTINGS" or "file()" when that
// clause or call is in stmt, a statement as formatQuerySingleLine prints
// it (keywords in upper case, identifiers and function names as written, a
// call's bracket right after its name, strings in quotes: '…', `…` or
// "…", a quote inside escaped with a backslash; no comments), and "" when
// none is. A function named alone after APPLY is a call too: * APPLY file
// calls file on every column.
func forbiddenClause(stmt string) string {
	var prev string
	for i := 0; i < len(stmt); {
		c := stmt[i]
		switch {
		case c == '\'' || c == '`' || c == '"':
			j := i + 1
			for ; j < len(stmt) && stmt[j] != c; j++ {
				if stmt[j] == '\\' {
					j++
				}
			}
			i, prev = j+1, ""
		case isWordByte(c):
			j := i
			for j < len(stmt) && isWordByte(stmt[j]) {
				j++
			}
			word := stmt[i:j]
			switch {
			case word == "SETTINGS" && settingFollows(stmt[j:]):
				return word
			case prev == "INTO" && strings.EqualFold(word, "OUTFILE"):
				return "INTO OUTFILE"
			case strings.EqualFold(word, "file") && (j < len(stmt) && stmt[j] == '(' || prev == "APPLY"):
				return "file()"
			}
			i, prev = j, strings.ToUpper(word)
		case c == ' ':
			i++
		default:
			i, prev = i+1, ""
		}
	}
	return ""
}

// settingFollows tells whether rest begins with "name =" (spaces
// around): what follows the keyword of a SETTINGS clause, where an alias
// named SETTINGS is followed by a comma, a bracket or nothing.
func settingFollows(rest string) bool {
	rest = strings.TrimLeft(rest, " ")
	i := 0
	if rest != "" && (rest[0] == '`' || rest[0] == '"') { // a quoted name
		end := strings.IndexByte(rest[1:], rest[0])
		if end < 0 {
			return true
		}
		i = end + 2
	}
	for i < len(rest) && isWordByte(rest[i]) {
		i++
	}
	return i > 0 && strings.HasPrefix(strings.TrimLeft(rest[i:], " "), "=")
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
