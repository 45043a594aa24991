package policymd

import (
	"reflect"
	"testing"
)

// TestCodexGolden is seed 004 §9: toCodexExecpolicy and
// toCodexGuardianPrompt.
func TestCodexGolden(t *testing.T) {
	pols := goldenPolicies(t)
	checkGolden(t, "testdata/golden/execpolicy.star", ToCodexExecpolicy(pols))
	checkGolden(t, "testdata/golden/guardian.txt", ToCodexGuardianPrompt(pols))
	checkGolden(t, "testdata/golden/execpolicy-empty.star", ToCodexExecpolicy(nil))
}

func TestIsCommandCapability(t *testing.T) {
	for _, c := range []string{"*", "shell", "shell.*", "shell.exec", "command.run", "exec", "execute", "exec_command", "process.exec", "container.exec", "bash", "terminal.run", "process.spawn", "local_shell"} {
		if !IsCommandCapability(c) {
			t.Errorf("IsCommandCapability(%q) = false", c)
		}
	}
	for _, c := range []string{"file.write", "payment.*", "process.kill", "shellfish", "network.fetch"} {
		if IsCommandCapability(c) {
			t.Errorf("IsCommandCapability(%q) = true", c)
		}
	}
}

func TestConditionPrefixes(t *testing.T) {
	tests := []struct {
		name string
		c    *Condition
		want [][]string
		skip bool
	}{
		{"command eq", &Condition{Field: field("payload.command", OpEq, "git push")}, [][]string{{"git", "push"}}, false},
		{"command in", &Condition{Field: fieldValues("payload.command", OpIn, "ls", "git  log")}, [][]string{{"ls"}, {"git", "log"}}, false},
		{"argv eq", &Condition{Field: field("payload.argv", OpEq, []any{"npm", "publish"})}, [][]string{{"npm", "publish"}}, false},
		{"argv.0 in", &Condition{Field: fieldValues("payload.argv.0", OpIn, "rm", "rmdir")}, [][]string{{"rm"}, {"rmdir"}}, false},
		{"argv positions", &Condition{And: []*Condition{
			{Field: field("payload.argv.1", OpEq, "push")},
			{Field: fieldValues("payload.argv.0", OpIn, "git", "hub")},
		}}, [][]string{{"git", "push"}, {"hub", "push"}}, false},
		{"argv gap", &Condition{And: []*Condition{
			{Field: field("payload.argv.0", OpEq, "git")},
			{Field: field("payload.argv.2", OpEq, "x")},
		}}, nil, true},
		{"argv.1 alone", &Condition{Field: field("payload.argv.1", OpEq, "push")}, nil, true},
		{"shell syntax", &Condition{Field: field("payload.command", OpEq, "a && b")}, nil, true},
		{"env assignment", &Condition{Field: field("payload.command", OpEq, "FOO=1 make")}, nil, true},
		{"empty command", &Condition{Field: field("payload.command", OpEq, "  ")}, nil, true},
		{"non-string", &Condition{Field: field("payload.command", OpEq, 3.0)}, nil, true},
		{"neq", &Condition{Field: field("payload.command", OpNeq, "ls")}, nil, true},
		{"other path", &Condition{Field: field("payload.path", OpEq, "ls")}, nil, true},
		{"not", &Condition{Not: &Condition{Field: field("payload.command", OpEq, "ls")}}, nil, true},
		{"and mixed", &Condition{And: []*Condition{
			{Field: field("payload.command", OpEq, "ls")},
			{Field: field("workerId", OpEq, "x")},
		}}, nil, true},
		{"or with a bad branch", &Condition{Or: []*Condition{
			{Field: field("payload.command", OpEq, "ls")},
			{Field: field("workerId", OpEq, "x")},
		}}, nil, true},
	}
	for _, tt := range tests {
		got, why := conditionPrefixes(tt.c)
		if tt.skip {
			if why == "" {
				t.Errorf("%s: got %v, want a skip", tt.name, got)
			}
			continue
		}
		if why != "" || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
}

func TestStarlarkString(t *testing.T) {
	tests := map[string]string{
		`plain`:          `"plain"`,
		`say "hi"`:       `"say \"hi\""`,
		`back\slash`:     `"back\\slash"`,
		"new\nline\ttab": `"new\nline\ttab"`,
		"bell\a":         `"bell "`,
		"bad\xffutf8":    "\"bad\uFFFDutf8\"",
		"ünïcode":        `"ünïcode"`,
	}
	for in, want := range tests {
		if got := starlarkString(in); got != want {
			t.Errorf("starlarkString(%q) = %s, want %s", in, got, want)
		}
	}
}
