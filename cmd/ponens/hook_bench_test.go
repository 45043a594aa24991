package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
)

// BenchmarkHookJudge is the hook's work inside the process for one
// PreToolUse call: load 20 rules, read a history of 1,000 calls, replay
// it and judge the call.
func BenchmarkHookJudge(b *testing.B) {
	dir := b.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte(twentyRules()), 0o644)
	writeHistory(b, dir)
	in := &claudecode.HookInput{SessionID: "sess-1", Cwd: "/repo", HookEventName: "PreToolUse", ToolName: "Bash", ToolInput: []byte(`{"command":"git commit -am done"}`)}
	for b.Loop() {
		set, probs := ruleset.Load(rules)
		if len(probs) > 0 {
			b.Fatal(probs)
		}
		set.Enforce = true
		eng, errs := monitor.NewEngine(set)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		calls, err := claudecode.HistoryOf(dir, "sess-1").Load()
		if err != nil {
			b.Fatal(err)
		}
		c := in.Call(time.Now())
		if _, err := judgeCall(eng, mapping.Default(), in, calls, &c); err != nil {
			b.Fatal(err)
		}
	}
}
