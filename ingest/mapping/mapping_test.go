package mapping

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/schema"
)

func call(tool, input string) *Call {
	return &Call{Tool: tool, Input: json.RawMessage(input), Status: StatusCompleted, TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func TestDefaultTable(t *testing.T) {
	cases := []struct {
		tool, input          string
		typ, capability, ref string
		category             string
	}{
		{"Read", `{"file_path":"/repo/a.go"}`, "ReadFile", "file.read", "a.go", "activity"},
		{"Edit", `{"file_path":"/repo/a.go","old_string":"x","new_string":"y"}`, "EditFile", "file.write", "a.go", "activity"},
		{"MultiEdit", `{"file_path":"/repo/b.go","edits":[]}`, "EditFile", "file.write", "b.go", "activity"},
		{"Write", `{"file_path":"/repo/new.go","content":""}`, "CreateFile", "file.write", "new.go", "activity"},
		{"Write", `{"file_path":"/repo/a.go","content":""}`, "EditFile", "file.write", "a.go", "activity"}, // a.go was read above
		{"Write", `{"file_path":"/elsewhere/x.go","content":""}`, "CreateFile", "file.write", "/elsewhere/x.go", "activity"},
		{"Grep", `{"pattern":"x","path":"/repo/pkg"}`, "SearchCode", "file.read", "pkg", "activity"},
		{"Glob", `{"pattern":"**/*.go"}`, "SearchCode", "file.read", "", "activity"},
		{"WebFetch", `{"url":"https://go.dev/doc","prompt":"p"}`, "ReadDocumentation", "web.fetch", "https://go.dev/doc", "activity"},
		{"Bash", `{"command":"git add -A && git commit -m fix"}`, "GitCommit", "git.commit", "", "gateway"},
		{"Bash", `{"command":"git -C sub commit -m x"}`, "GitCommit", "git.commit", "", "gateway"},
		{"Bash", `{"command":"git log --oneline"}`, "RunCommand", "shell.exec", "", "activity"},
		{"Bash", `{"command":"go test ./..."}`, "RunTests", "shell.exec", "", "activity"},
		{"Bash", `{"command":"cd api && pytest -q"}`, "RunTests", "shell.exec", "", "activity"},
		{"Bash", `{"command":"npm run test"}`, "RunTests", "shell.exec", "", "activity"},
		{"Bash", `{"command":"cargo test --all"}`, "RunTests", "shell.exec", "", "activity"},
		{"Bash", `{"command":"echo go testing"}`, "RunCommand", "shell.exec", "", "activity"},
		{"shell", `{"command":["bash","-lc","go test ./..."]}`, "RunTests", "shell.exec", "", "activity"},
		{"shell", `{"command":["bash","-lc","sed -n 1,80p /repo/src/a.go"]}`, "ReadFile", "file.read", "src/a.go", "activity"},
		{"Bash", `{"command":"cat -n README.md"}`, "ReadFile", "file.read", "README.md", "activity"},
		{"Bash", `{"command":"cat a.go | wc -l"}`, "RunCommand", "shell.exec", "", "activity"},
		{"shell", `{"command":["rg","-n","refund"]}`, "SearchCode", "file.read", "", "activity"},
		{"Task", `{"prompt":"x"}`, "Delegate", "agent.delegate", "", "reasoning"},
		{"mcp__github__create_issue", `{}`, "ToolCall", "tool.call", "", "activity"},
	}
	s := NewSession(Default(), "r", "/repo")
	for _, c := range cases {
		t.Run(c.tool+" "+c.input, func(t *testing.T) {
			evs := s.Call(call(c.tool, c.input))
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1", len(evs))
			}
			a := evs[0].Action
			if a.Type != c.typ || a.Capability != c.capability || a.Category != c.category {
				t.Errorf("type %s capability %s category %s, want %s %s %s", a.Type, a.Capability, a.Category, c.typ, c.capability, c.category)
			}
			ref := ""
			if len(a.Evidence) > 0 {
				ref = a.Evidence[0].Ref
			}
			if ref != c.ref {
				t.Errorf("target %q, want %q", ref, c.ref)
			}
			if err := evs[0].Validate(); err != nil {
				t.Errorf("invalid event: %v", err)
			}
		})
	}
}

func TestPayloadForPolicyMD(t *testing.T) {
	s := NewSession(Default(), "r", "/repo")
	a := s.Call(call("Write", `{"file_path":"/repo/config/.env","content":"K=1"}`))[0].Action
	var p map[string]any
	if err := json.Unmarshal(a.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p["path"] != "config/.env" || p["content"] != "K=1" || a.ToolName != "Write" {
		t.Errorf("payload %v tool %q", p, a.ToolName)
	}
	a = s.Call(call("Bash", `{"command":"rm -rf build"}`))[0].Action
	_ = json.Unmarshal(a.Payload, &p)
	if p["command"] != "rm -rf build" {
		t.Errorf("payload %v", p)
	}
}

// The lineage of a session: edits make SourceCode versions, a test run
// consumes the files edited since the last commit and produces a
// TestResult, a commit consumes them and starts a new set.
func TestLineage(t *testing.T) {
	s := NewSession(Default(), "r", "/repo")
	steps := []*Call{
		call("Edit", `{"file_path":"/repo/a.go"}`),
		call("Edit", `{"file_path":"/repo/b.go"}`),
		call("Edit", `{"file_path":"/repo/a.go"}`),
		call("Bash", `{"command":"go test ./..."}`),
		call("Bash", `{"command":"git commit -am x"}`),
		call("Edit", `{"file_path":"/repo/b.go"}`),
		call("Bash", `{"command":"git commit -am y"}`),
	}
	steps[3].Status = StatusFailed
	var acts []*schema.Action
	for _, c := range steps {
		acts = append(acts, s.Call(c)[0].Action)
	}
	want := []struct{ in, out, artType string }{
		{"", "src:a.go@1", "SourceCode"},
		{"", "src:b.go@1", "SourceCode"},
		{"src:a.go@1", "src:a.go@2", "SourceCode"},
		{"src:a.go@2 src:b.go@1", "test:1", "TestResult"},
		{"src:a.go@2 src:b.go@1", "", ""},
		{"src:b.go@1", "src:b.go@2", "SourceCode"},
		{"src:b.go@2", "", ""},
	}
	for i, w := range want {
		a := acts[i]
		if got := strings.Join(a.Inputs, " "); got != w.in {
			t.Errorf("step %d inputs %q, want %q", i+1, got, w.in)
		}
		if got := strings.Join(a.Outputs, " "); got != w.out {
			t.Errorf("step %d outputs %q, want %q", i+1, got, w.out)
		}
		if w.artType != "" && (len(a.Artifacts) != 1 || a.Artifacts[0].Type != w.artType || *a.Artifacts[0].ProducerActionID != a.ID) {
			t.Errorf("step %d artifacts %+v, want one %s", i+1, a.Artifacts, w.artType)
		}
	}
	if got := string(acts[3].Artifacts[0].Payload); !strings.Contains(got, `"status":"failed"`) {
		t.Errorf("failed test run's result %s", got)
	}
	if got := acts[2].Artifacts[0].Supersedes; len(got) != 1 || got[0] != "src:a.go@1" {
		t.Errorf("second version supersedes %v", got)
	}
}

func TestProposeLeavesTheSessionAlone(t *testing.T) {
	s := NewSession(Default(), "r", "")
	s.Call(call("Edit", `{"file_path":"a.go"}`))
	p := s.Propose(call("Edit", `{"file_path":"a.go"}`))
	if p[0].ID != 2 || p[0].Outputs[0] != "src:a.go@2" {
		t.Fatalf("proposal %+v", p[0])
	}
	got := s.Call(call("Bash", `{"command":"git commit -m x"}`))[0]
	if got.Seq != 2 || got.Action.ID != 2 || strings.Join(got.Action.Inputs, " ") != "src:a.go@1" {
		t.Errorf("after a proposal: seq %d id %d inputs %v", got.Seq, got.Action.ID, got.Action.Inputs)
	}
}

func TestFilesMakeOneActionEach(t *testing.T) {
	s := NewSession(Default(), "r", "")
	c := call("apply_patch", `{"input":"*** Begin Patch"}`)
	c.Files, c.NewFiles = []string{"a.go", "b.go"}, []string{"b.go"}
	evs := s.Call(c)
	if len(evs) != 2 || evs[0].Action.Type != "EditFile" || evs[1].Action.Type != "CreateFile" || evs[1].Seq != 2 {
		t.Fatalf("%+v", evs)
	}
}

func TestOverride(t *testing.T) {
	tb, err := Load([]byte("rules:\n  - tools: [Bash]\n    command: '^make deploy'\n    type: Deploy\n    category: gateway\n    capability: deploy.run\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSession(tb, "r", "")
	if a := s.Call(call("Bash", `{"command":"make deploy"}`))[0].Action; a.Type != "Deploy" || a.Capability != "deploy.run" {
		t.Errorf("override: %s %s", a.Type, a.Capability)
	}
	if a := s.Call(call("Bash", `{"command":"go test"}`))[0].Action; a.Type != "RunTests" {
		t.Errorf("shipped rules after the override: %s", a.Type)
	}
	tb, err = Load([]byte("replace: true\nrules:\n  - tools: ['*']\n    type: Step\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r := tb.Match("Bash", "go test"); r.Type != "Step" || len(tb.Rules) != 1 {
		t.Errorf("replace: %d rules, %s", len(tb.Rules), r.Type)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"", "m.yaml: expected a mapping with rules, got an empty file"},
		{"rules: [", "m.yaml: expected YAML"},
		{"rulez: []", "m.yaml:1:1: rulez: unknown key (expected one of replace, rules)"},
		{"rules: []", "m.yaml:1:1: rules: expected at least one rule"},
		{"rules:\n  - tools: [Bash]\n    type: lowercase", "m.yaml:2:5: type: expected a CamelCase action type, got \"lowercase\""},
		{"rules:\n  - tools: []\n    type: X", "m.yaml:2:5: tools: expected at least one tool name or glob"},
		{"rules:\n  - tools: ['[']\n    type: X", "m.yaml:2:5: tools: expected a tool name or glob, got \"[\""},
		{"rules:\n  - tools: [Bash]\n    type: X\n    command: '('", "m.yaml:2:5: command: expected a regular expression"},
		{"rules:\n  - tools: [Bash]\n    type: X\n    lineage: deploy", "m.yaml:2:5: lineage: expected edit, test or commit, got \"deploy\""},
		{"rules:\n  - tools: [Bash]\n    type: X\n    category: misc", "m.yaml:2:5: category: expected activity"},
		{"rules:\n  - tools: [Bash]\n    type: X\n    capabilty: a", "m.yaml:4:5: capabilty: unknown key"},
		{"rules:\n  - tools: Bash\n    type: X", "m.yaml:2:5: cannot unmarshal"},
		{"rules:\n  - just a string", "m.yaml:2:5: expected a mapping"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.src), "m.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.src, err, c.want)
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Errorf("%q: %T is not an *Error", c.src, err)
		}
	}
}

func TestSeedCorpusParses(t *testing.T) {
	if _, err := Parse(DefaultYAML(), "default"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	if len(files) == 0 {
		t.Fatal("no seed corpus under testdata")
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if _, err := Parse(data, f); err != nil && !strings.Contains(f, "bad") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// FuzzParse: no mapping file crashes the parser, every failure is an
// *Error with the file's name, and every table that parses maps a call.
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tb, err := Parse(data, "f.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		s := NewSession(tb, "r", "")
		s.Call(call("Bash", `{"command":"go test"}`))
		s.Call(call("Edit", `{"file_path":"a"}`))
	})
}
