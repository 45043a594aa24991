package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// setHelp gives every command under root the same help: the use line as
// written (no "[flags]" appended), and flags shown as they are typed
// (--json for a switch, --url URL for a value: flagUsages).
func setHelp(root *cobra.Command) {
	cobra.AddTemplateFunc("flagUsages", flagUsages)
	tmpl := root.UsageTemplate()
	tmpl = strings.ReplaceAll(tmpl, ".LocalFlags.FlagUsages", "flagUsages .LocalFlags")
	tmpl = strings.ReplaceAll(tmpl, ".InheritedFlags.FlagUsages", "flagUsages .InheritedFlags")
	root.SetUsageTemplate(tmpl)
	root.SetVersionTemplate("{{.Version}}\n")
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableFlagsInUseLine = true
		c.InitDefaultHelpFlag()
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	root.InitDefaultVersionFlag()
	if f := root.Flags().Lookup("version"); f != nil {
		f.Usage = "print the version, commit and Go version"
	}
}

// placeholders name the values of flags whose usage text does not name
// them itself (a `NAME` in backquotes does).
var placeholders = map[string]string{
	"url": "URL", "rules": "PATH", "formula": "FORMULA", "id": "ID", "out": "DIR",
	"dir": "DIR", "listen": "ADDR", "http": "ADDR", "data": "DIR", "prefix": "PREFIX",
	"run": "ID", "history": "TRACE", "cwd": "DIR", "where": "EXPR", "mode": "MODE", "name": "NAME", "token": "TOKEN",
	"agent": "ID", "cpuprofile": "FILE", "memprofile": "FILE", "samples": "FILE",
	"rule": "GLOB", "project": "PROJECT", "secret": "SECRET", "slack": "URL", "webhook": "URL",
	"status": "STATUS", "subject": "SUBJECT", "fail-on": "STATUS", "verdicts-dir": "DIR",
	"reason": "REASON", "model-calls": "KIND", "traces": "PATH", "dashboard-url": "URL",
}

// flagUsages lists the visible flags of fs, one per line: "--json" for a
// switch, "--url URL" for a value, then the usage and a default that is not
// the zero value.
func flagUsages(fs *pflag.FlagSet) string {
	type line struct{ left, usage string }
	var lines []line
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		left := "      --" + f.Name
		if f.Shorthand != "" {
			left = "  -" + f.Shorthand + ", --" + f.Name
		}
		name, usage := pflag.UnquoteUsage(f)
		if f.Value.Type() != "bool" {
			if p, ok := placeholders[f.Name]; ok && !strings.Contains(f.Usage, "`") {
				name = p
			}
			left += " " + placeholderOf(name)
		}
		if def := f.DefValue; def != "" && def != "0" && def != "false" && def != "[]" && def != "0s" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		width = max(width, len(left))
		lines = append(lines, line{left, usage})
	})
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%-*s   %s\n", width, l.left, l.usage)
	}
	return b.String()
}

// placeholderOf turns pflag's type names into placeholders.
func placeholderOf(name string) string {
	switch name {
	case "int", "uint", "int64", "uint64":
		return "N"
	case "float", "float64":
		return "NUMBER"
	case "duration":
		return "DURATION"
	case "string", "stringArray", "strings":
		return "VALUE"
	}
	return name
}
