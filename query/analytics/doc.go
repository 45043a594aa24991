// Package analytics runs the read-only SQL a user asks of the store
// (`ponens sql`) and renders its answer as a table, JSON lines or CSV.
//
// Decisions:
//   - Read-only is the engine's, not a parse of the SQL: the session runs
//     with ClickHouse's readonly = 2 before the user's statement, so INSERT,
//     ALTER, DROP and CREATE are refused by the engine with its own message,
//     and SETTINGS clauses still work (readonly itself cannot be changed).
//   - The schema is migrated before the query, so a fresh store answers with
//     empty tables instead of "unknown table".
//   - Formats are ClickHouse's: table is PrettyCompactMonoBlock without
//     colour, json is JSONEachRow (one object per line, for jq), csv is
//     CSVWithNames.
package analytics
