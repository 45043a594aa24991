// Package readlimit reads whole input files under a size limit from the
// configuration, refusing a larger file before reading past the limit
// (a file whose size the system reports is refused before any read), and
// cuts input echoed in error messages to a short excerpt around the
// position the message names.
//
// Every reader of a whole file goes through ReadFile: trace files
// (trace.max_file_bytes, and trace.max_reference_bytes for a reference
// trace, which is decoded whole), rule files and POLICY.md
// (rules.max_file_bytes). The error wraps schema.ErrTooLarge and names the
// file, its size, the limit and the configuration key that sets it.
package readlimit
