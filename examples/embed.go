// Package examples holds the example rules, traces and step proposals the
// README uses, and embeds the rules so that a command can load them from any
// working directory.
package examples

import "embed"

// Rules are the files of examples/rules: the rules `ponens bench` loads
// when it is given none.
//
//go:embed rules
var Rules embed.FS
