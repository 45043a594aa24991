// Package analytics runs the read-only SQL a user asks of the store
// (`ponens sql`) and renders its answer as a table, JSON lines or CSV.
//
// Decisions:
//   - Only a query runs: the user's statement becomes the subquery of a
//     SELECT (Wrap), which the store's own parser reads and prints back as
//     one statement (Statement, with formatQuerySingleLine given the text
//     as a parameter); that printed statement is what runs. The parser
//     refuses a second statement, even one begun after a bracket that
//     closes the subquery early, and reads INSERT INTO FUNCTION, KILL,
//     SYSTEM or SET as a syntax error; INTO OUTFILE, SETTINGS clauses
//     and calls of file() are refused by name in the printed statement (a
//     SETTINGS clause could lift readonly for the query, and the function
//     file() reads files, which readonly allows). An EXPLAIN is read as it
//     stands and must print back as one EXPLAIN. Matching brackets or
//     splitting on semicolons here instead would
//     differ from the engine's lexer (heredocs, comments, escapes), and
//     the embedded engine runs every statement of a multi-statement text,
//     some of them past readonly. The embedded session also runs with
//     readonly = 1: a query reads the store only (file(), url() and the
//     other table functions that reach files or the network are refused,
//     numbers() and values() work). A first word that no
//     query begins with is refused before the engine sees it, by name
//     (QueryOnly). SHOW, DESCRIBE and EXISTS cannot be subqueries, so they
//     are refused too; system.tables and system.columns answer them.
//   - The schema is migrated before the query, so a fresh store answers with
//     empty tables instead of "unknown table".
//   - Formats are ClickHouse's: table is PrettyCompactMonoBlock without
//     colour, json is JSONEachRow (one object per line, for jq), csv is
//     CSVWithNames.
package analytics
