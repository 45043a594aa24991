// Package analytics runs the read-only SQL a user asks of the store
// (`ponens sql`) and renders its answer as a table, JSON lines or CSV.
//
// Decisions:
//   - Only a query runs: the user's statement is the subquery of a SELECT
//     (Wrap), so the engine's parser refuses whatever is not one query
//     (INSERT INTO FUNCTION, KILL, SYSTEM, SET, INTO OUTFILE, a second
//     statement after a semicolon), which readonly alone lets through. The
//     session also runs with readonly = 2, so SETTINGS clauses still work
//     and readonly itself cannot be changed. A first word that no query
//     begins with is refused before the engine sees it, by name
//     (QueryOnly). SHOW, DESCRIBE and EXISTS cannot be subqueries, so they
//     are refused too; system.tables and system.columns answer them.
//   - The schema is migrated before the query, so a fresh store answers with
//     empty tables instead of "unknown table".
//   - Formats are ClickHouse's: table is PrettyCompactMonoBlock without
//     colour, json is JSONEachRow (one object per line, for jq), csv is
//     CSVWithNames.
package analytics
