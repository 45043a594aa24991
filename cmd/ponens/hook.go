package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/policymd"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
)

func init() { subcommands = append(subcommands, newHookCommand) }

func newHookCommand() *cobra.Command {
	cmd := groupCommand("hook", "Enforce the rules inside an agent, as its hook")
	cmd.Example = `  ponens hook claude-code --install --dry-run --rules examples/rules`
	cmd.AddCommand(newHookClaudeCodeCommand())
	return cmd
}

// hookOptions are the flags of `ponens hook claude-code`.
type hookOptions struct {
	rf            ruleFlags
	state         string
	install       bool
	dir           string
	dryRun        bool
	explicitAllow bool
	publish       bool
}

func newHookClaudeCodeCommand() *cobra.Command {
	var o hookOptions
	cmd := &cobra.Command{
		Use:   "claude-code (--rules PATH | --formula FORMULA)... [--state DIR] [--explicit-allow] | --install [--dir DIR] [--dry-run] --rules PATH...",
		Short: "Claude Code's PreToolUse/PostToolUse hook: deny or ask before a step that breaks a rule",
		Long: `Run as a Claude Code command hook. Reads the hook's JSON on stdin.

On PreToolUse, the tool call is mapped to an action through the mapping
table (as ponens import claude-code maps it) and judged as the session's
next step, given the calls the session has completed so far, by the
POLICY.md rules and every temporal rule whose mode is deny, suspend or
abort (modes are enforced whatever the rules file says). A deny answers
permissionDecision "deny", a require_approval "ask", each with the rule
and its reason. When no rule objects, the hook answers nothing, so
Claude Code's own permission settings decide; --explicit-allow answers
"allow" instead, which skips Claude Code's permission prompt.

On PostToolUse (and PostToolUseFailure) the completed call is added to the
session's history, a file under --state (default
$XDG_STATE_HOME/ponens/claude-code, else ~/.local/state/ponens/claude-code);
with --publish its events also go to the EVENTS stream of a running
service (--url), in the run named by the session id.

--install writes the hook into DIR/.claude/settings.json (default: the
current directory) for PreToolUse and PostToolUse on every tool, with the
--rules given (inside DIR as "$CLAUDE_PROJECT_DIR"/PATH), printing the
diff of the file; --dry-run prints the diff only.

Claude Code reads an answer only from a hook that exits 0: the hook exits
0 whenever it answered, also for deny and ask. Exit 2 on bad input
(Claude Code then blocks the call and shows the message), 3 when
--publish cannot reach NATS.`,
		Example: `  ponens hook claude-code --install --dry-run --rules examples/rules
  echo '{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"config/.env"}}' | ponens hook claude-code --rules examples/rules --state .hook-state`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.install {
				return o.runInstall(cmd)
			}
			for _, name := range []string{"dir", "dry-run"} {
				if cmd.Flags().Changed(name) {
					return exitWith(exitBadInput, "--%s is for --install", name)
				}
			}
			return o.runHook(cmd)
		},
	}
	o.rf.register(cmd)
	cmd.Flags().StringVar(&o.state, "state", "", "keep each session's completed calls in this `DIR`")
	cmd.Flags().BoolVar(&o.explicitAllow, "explicit-allow", false, `answer "allow" when no rule objects (skips Claude Code's permission prompt)`)
	cmd.Flags().BoolVar(&o.publish, "publish", false, "on PostToolUse, also publish the completed call's events to the EVENTS stream (run id: the session id)")
	cmd.Flags().String("url", "", "with --publish: NATS server URL (nats.url; empty: the embedded server at nats.listen)")
	cmd.Flags().BoolVar(&o.install, "install", false, "write the hook into DIR/.claude/settings.json")
	cmd.Flags().StringVar(&o.dir, "dir", ".", "with --install: the project `DIR`")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "with --install: print the diff, write nothing")
	return cmd
}

func (o *hookOptions) runHook(cmd *cobra.Command) error {
	if cmd.Flags().Changed("url") && !o.publish {
		return exitWith(exitBadInput, "--url is where --publish sends the events: give --publish with it")
	}
	// A hook lives for one call and allocates little: collect garbage only
	// near a bound instead of on every doubling of a small heap.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(256 << 20)
	cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url"})
	if err != nil {
		return err
	}
	in, err := claudecode.DecodeHookInput(cmd.InOrStdin())
	if err != nil {
		return exitWith(exitBadInput, "%v", err)
	}
	table, err := loadMapping(cfg.Mapping)
	if err != nil {
		return err
	}
	dir := o.state
	if dir == "" {
		if dir, err = claudecode.StateDir(); err != nil {
			return exitWith(exitBadInput, "--state: %v", err)
		}
	}
	hist := claudecode.HistoryOf(dir, in.SessionID)
	call := in.Call(time.Now())
	if in.HookEventName != claudecode.PreToolUse {
		if !o.publish {
			if err := hist.Append(&call); err != nil {
				return exitWith(exitBadInput, "--state: %v", err)
			}
			return nil
		}
		return recordAndPublish(cmd, cfg, table, in, hist, &call)
	}
	set, err := o.rf.load(cfg.Rules, true)
	if err != nil {
		return err
	}
	// Only rules that can decide are judged: observing rules never deny.
	set.Rules = slices.DeleteFunc(set.Rules, func(r *ruleset.Rule) bool { return r.Capability == nil && set.Enforced(r) == ruleset.Observe })
	eng, errs := monitor.NewEngine(set)
	if len(errs) > 0 {
		return exitWith(exitBadInput, "%v", errs[0])
	}
	calls, err := hist.Load()
	if err != nil {
		return exitWith(exitBadInput, "%v", err)
	}
	d, err := judgeCall(eng, table, in, calls, &call)
	if err != nil {
		return err
	}
	return o.answer(cmd, d)
}

// recordAndPublish appends the completed call to the session's history
// and publishes the events it adds to the session's run (run.start with
// the first call), holding a lock on the history so that concurrent hooks
// of one session number their events one after the other.
func recordAndPublish(cmd *cobra.Command, cfg config.Config, table *mapping.Table, in *claudecode.HookInput, hist claudecode.History, call *mapping.Call) error {
	unlock, err := hist.Lock()
	if err != nil {
		return exitWith(exitBadInput, "--state: %v", err)
	}
	defer unlock()
	calls, err := hist.Load()
	if err != nil {
		return exitWith(exitBadInput, "%v", err)
	}
	before := len(sessionEvents(table, in, calls))
	events := sessionEvents(table, in, append(calls, *call))[before:]
	if err := publishEvents(cmd, cfg, events); err != nil {
		return err
	}
	if err := hist.Append(call); err != nil {
		return exitWith(exitBadInput, "--state: %v", err)
	}
	return nil
}

// sessionEvents are the events of the session's run so far: run.start
// and the actions of its completed calls.
func sessionEvents(table *mapping.Table, in *claudecode.HookInput, calls []mapping.Call) []schema.Event {
	sess := mapping.NewSession(table, in.SessionID, in.Cwd)
	ts := time.Now()
	if len(calls) > 0 {
		ts = calls[0].TS
	}
	events := []schema.Event{sess.Start(ts, hookStart())}
	for i := range calls {
		events = append(events, sess.Call(&calls[i])...)
	}
	return events
}

// hookStart is the run.start body of a session the hook records.
func hookStart() *schema.RunStart {
	return &schema.RunStart{Agent: "claude-code", Trigger: json.RawMessage(`{"type":"UserRequest"}`)}
}

// judgeCall replays the session's completed calls into a run of eng and
// judges call as its next step: the most severe decision of its actions.
func judgeCall(eng *monitor.Engine, table *mapping.Table, in *claudecode.HookInput, calls []mapping.Call, call *mapping.Call) (monitor.Decision, error) {
	sess := mapping.NewSession(table, in.SessionID, in.Cwd)
	run := eng.NewRun(in.SessionID)
	ts := time.Now()
	if len(calls) > 0 {
		ts = calls[0].TS
	}
	start := sess.Start(ts, hookStart())
	if _, err := run.Add(&start); err != nil {
		return monitor.Decision{}, exitWith(exitBadInput, "%v", err)
	}
	for i := range calls {
		for _, ev := range sess.Call(&calls[i]) {
			if _, err := run.Add(&ev); err != nil {
				return monitor.Decision{}, exitWith(exitBadInput, "history of session %s, call %d: %v", in.SessionID, i+1, err)
			}
		}
	}
	best := monitor.Decision{Decision: policymd.Allow}
	for _, a := range sess.Propose(call) {
		if d := run.Decide(&a); severity(d.Decision) > severity(best.Decision) {
			best = d
		}
	}
	return best, nil
}

func severity(a policymd.Action) int {
	switch a {
	case policymd.Deny:
		return 2
	case policymd.RequireApproval:
		return 1
	}
	return 0
}

// answer prints the PreToolUse answer for d.
func (o *hookOptions) answer(cmd *cobra.Command, d monitor.Decision) error {
	decision := ""
	switch d.Decision {
	case policymd.Deny:
		decision = "deny"
	case policymd.RequireApproval:
		decision = "ask"
	default:
		if !o.explicitAllow {
			return nil
		}
		decision = "allow"
	}
	reason := "ponens: " + d.Reason
	if d.Rule != nil {
		reason = fmt.Sprintf("ponens rule %s: %s", *d.Rule, d.Reason)
	}
	return writeJSONLines(cmd.OutOrStdout(), []claudecode.HookOutput{claudecode.Answer(decision, reason)})
}

func (o *hookOptions) runInstall(cmd *cobra.Command) error {
	if len(o.rf.rules) == 0 {
		return exitWith(exitBadInput, "--install: give the --rules the hook loads")
	}
	if len(o.rf.formulas) > 0 || cmd.Flags().Changed("explicit-allow") {
		return exitWith(exitBadInput, "--install writes --rules and --state into the hook's command; put other flags in by hand")
	}
	if _, err := o.rf.load(config.RulesConfig{}, true); err != nil {
		return err
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return exitWith(exitBadInput, "--dir: %v", err)
	}
	command := "ponens hook claude-code"
	for _, r := range o.rf.rules {
		command += " --rules " + projectPath(dir, r)
	}
	if o.state != "" {
		command += " --state " + projectPath(dir, o.state)
	}
	diff, err := claudecode.Install(dir, command, o.dryRun)
	if err != nil {
		return exitWith(exitBadInput, "%v", err)
	}
	out := cmd.OutOrStdout()
	path := claudecode.SettingsPath(dir)
	switch {
	case diff == "":
		fmt.Fprintf(out, "%s already runs %s\n", path, command)
	case o.dryRun:
		fmt.Fprintf(out, "%s(dry run: nothing written)\n", diff)
	default:
		fmt.Fprintf(out, "%swrote %s\n", diff, path)
	}
	return nil
}

// projectPath is p as the hook's command names it: "$CLAUDE_PROJECT_DIR"/REL
// inside dir, else the absolute path, quoted for the shell.
func projectPath(dir, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = p
	}
	if rel, err := filepath.Rel(dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return `"$CLAUDE_PROJECT_DIR"/` + shellQuote(filepath.ToSlash(rel))
	}
	return shellQuote(abs)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
