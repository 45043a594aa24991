package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyCheckCommand(t *testing.T) {
	out, _, code := runPonens(t, "policy", "check", "--json", "../../examples/rules/gallery.yaml")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	want := `{"id":"tests_before_commit","file":"../../examples/rules/gallery.yaml","level":"pure_temporal","declared_level":"pure_temporal","printed":"G(GitCommit → P(RunTests ∧ completed))","error":""}`
	if first != want {
		t.Errorf("first line\n got %s\nwant %s", first, want)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("rules:\n  - id: x\n    formula: G(a ∧)\n"), 0o644)
	out, _, code = runPonens(t, "policy", "check", "--json", bad)
	if code != exitBadInput || !strings.Contains(out, `"error":"`+bad+`:3:19: rule x: syntax: expected a formula, found ')'"`) {
		t.Errorf("exit %d, out %s", code, out)
	}
}

func TestEvalCommand(t *testing.T) {
	out, _, code := runPonens(t, "eval", "--json", "--formula", "G(GitCommit → P(RunTests ∧ completed))", "--id", "tbc",
		"--formula", "F(EditFile)", "../../examples/traces/fleet.jsonl")
	if code != exitViolated {
		t.Fatalf("exit %d: %s", code, out)
	}
	want := strings.Join([]string{
		`{"rule":"tbc","trace":"../../examples/traces/fleet.jsonl#fleet-run-1","result":"pass","witnesses":[]}`,
		`{"rule":"formula-2","trace":"../../examples/traces/fleet.jsonl#fleet-run-1","result":"pass","witnesses":[]}`,
		`{"rule":"tbc","trace":"../../examples/traces/fleet.jsonl#fleet-run-2","result":"fail","witnesses":[2]}`,
		`{"rule":"formula-2","trace":"../../examples/traces/fleet.jsonl#fleet-run-2","result":"pass","witnesses":[]}`,
		`{"rule":"tbc","trace":"../../examples/traces/fleet.jsonl#fleet-run-3","result":"not_applicable","witnesses":[]}`,
		`{"rule":"formula-2","trace":"../../examples/traces/fleet.jsonl#fleet-run-3","result":"pass","witnesses":[]}`,
	}, "\n") + "\n"
	if out != want {
		t.Errorf("output\n got:\n%s\nwant:\n%s", out, want)
	}
	if _, _, code := runPonens(t, "eval", "--formula", "F(RunTests)", "../../examples/traces/verify_proved.json"); code != exitOK {
		t.Errorf("passing eval exit %d", code)
	}
	_, errOut, code := runPonens(t, "eval", "--formula", "F(", "../../examples/traces/verify_proved.json")
	if code != exitBadInput || !strings.Contains(errOut, "--formula:1:3: rule formula-1: syntax") {
		t.Errorf("bad formula: exit %d, %s", code, errOut)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"action","action":{"id":1}}`+"\n"), 0o644)
	_, errOut, code = runPonens(t, "eval", "--formula", "F(a)", bad)
	if code != exitBadInput || !strings.Contains(errOut, bad+":1") || !strings.Contains(errOut, "action.type") {
		t.Errorf("bad trace: exit %d, %s", code, errOut)
	}
	if _, _, code := runPonens(t, "eval", "../../examples/traces/fleet.jsonl"); code != exitBadInput {
		t.Errorf("no rules: exit %d", code)
	}
}

func TestDecideCommand(t *testing.T) {
	ex := "../../examples/decide/"
	cases := []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--json", "--rules", "../../examples/rules", ex + "intent.json"},
			`{"decision":"deny","rule":"no-env-writes","reason":"Never write .env or secret files","source":"policy.md"}`, exitViolated},
		{[]string{"--json", "--rules", "../../examples/rules", "--history", ex + "history.jsonl", ex + "commit.json"},
			`{"decision":"deny","rule":"tests_before_commit","reason":"Every commit is preceded by a test run that completed. (the step would violate P(RunTests ∧ completed))","source":"temporal"}`, exitViolated},
		{[]string{"--json", "--rules", "../../examples/rules", ex + "commit.json"},
			`{"decision":"deny","rule":"tests_before_commit","reason":"Every commit is preceded by a test run that completed. (the step would violate P(RunTests ∧ completed))","source":"temporal"}`, exitViolated},
		// A --formula denies by default (--mode deny); --mode observe only records.
		{[]string{"--json", "--formula", "G(GitCommit → P(RunTests))", ex + "commit.json"},
			`{"decision":"deny","rule":"formula-1","reason":"formula-1 (the step would violate P(RunTests))","source":"temporal"}`, exitViolated},
		{[]string{"--json", "--formula", "G(GitCommit → P(RunTests))", "--mode", "observe", ex + "commit.json"},
			`{"decision":"allow","rule":null,"reason":"no rule matched; allowed by default","source":null}`, exitOK},
		{[]string{"--json", "--formula", "G(GitCommit → P(RunTests))", "--mode", "suspend", ex + "commit.json"},
			`{"decision":"require_approval","rule":"formula-1","reason":"formula-1 (the step would violate P(RunTests))","source":"temporal"}`, exitViolated},
	}
	for _, c := range cases {
		out, errOut, code := runPonens(t, append([]string{"decide"}, c.args...)...)
		if code != c.code || strings.TrimSpace(out) != c.want {
			t.Errorf("decide %v: exit %d\n got %s%s\nwant %s", c.args, code, out, errOut, c.want)
		}
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notjson.json":  `nope`,
		"nocap.json":    `{"toolName":"x"}`,
		"unknown.json":  `{"capability":"a.b","colour":1}`,
		"badevent.json": `{"type":"action","action":{"id":1}}`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, errOut, code := runPonens(t, "decide", "--rules", "../../examples/rules", p); code != exitBadInput || !strings.Contains(errOut, p) {
			t.Errorf("%s: exit %d, %s", name, code, errOut)
		}
	}
}
