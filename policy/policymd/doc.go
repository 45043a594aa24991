// Package policymd implements POLICY.md (seed 004, version 0.2.0): a
// Markdown file with YAML frontmatter declaring what an AI agent must not do,
// must ask before doing, and may do. The package parses and validates the
// files, matches capabilities, evaluates conditions, authorizes intents,
// discovers and installs files, renders them as agent context, and converts
// them for OpenAI Codex. It does no network I/O of its own; Install runs git.
//
// One file per job: policy.go (the model), parse.go (the frontmatter, YAML
// syntax and positions), decode.go (YAML nodes to the model, checking types
// and shapes), validate.go (problems and the value checks), capability.go,
// condition.go, intent.go, engine.go, discover.go, context.go, codex.go and
// install.go.
//
// # File format
//
// A POLICY.md file starts (after an optional UTF-8 byte order mark) with a
// line "---"; the YAML frontmatter runs to the next "---" line, and
// everything after that line is the Markdown body, kept byte for byte. The
// frontmatter fields, their types and defaults are those of seed 004 §2:
//
//	name        string, required, kebab-case or snake_case
//	description string
//	version     string (any YAML scalar is taken as its text: 1.0 is "1.0")
//	scope       project | skill | agent | department      (default project)
//	appliesTo   non-empty list of non-empty strings       (default [all])
//	severity    block | warn | require_approval           (default block)
//	rules       list of rules
//	strict      boolean: validate this file strictly (see Strict mode)
//
//	rule:  id string, capability string (required), action allow | deny |
//	       require_approval (required), condition, reason string,
//	       priority number (default 0), description string
//
//	condition: exactly one of
//	       field: {path: string, op: string, value: any, values: [any]}
//	       and: [condition, ...]   or: [condition, ...]   not: condition
//
// A rule without an id gets "<policy-name>#<index>", the index counting the
// file's rules from 1. String fields must be YAML strings (an unquoted 42 is
// a bad-type problem that says to quote it). A null optional field counts as
// absent. Priorities must be finite numbers.
//
// # Validation
//
// Parse reports every problem of a file, sorted by position, each as
// "file:line:col: code: message" with file positions (the frontmatter's
// offset added) pointing at the offending key or value, or at the enclosing
// mapping for a missing field. The codes are the Code constants. Besides the
// checks of seed 004 §7 (required fields and types; scope, action, op and
// severity values; value or values as each operator needs, a number for gt,
// gte, lt and lte; YAML syntax) the package always checks the name's case,
// the capability pattern's syntax, that a path starts with an ActionIntent
// field (bad-path), duplicate keys, duplicate rule ids, that and/or lists are
// not empty, and it refuses YAML merge keys. Nesting deeper than 64 levels
// and more than 100,000 YAML nodes (aliases expanded) are too-large problems;
// an alias that contains itself is a bad-value problem. Parse never panics.
//
// Lines are counted by "\n" (a CRLF file numbers the same; YAML's other
// line breaks, a lone "\r", U+0085, U+2028 and U+2029, are mapped back to
// the "\n" line they sit on), columns in characters. yaml.v3 does not report
// reliable positions for syntax errors, so a
// yaml-syntax problem is placed at column 1 of the first line at which the
// frontmatter fails with the same error, at its first non-space column.
//
// Strict mode. Options.Strict, or "strict: true" in the frontmatter itself
// (either one suffices; seed 004 §7 says "when strict: true"), turns on two
// more checks: unknown-field for keys the schema does not know (with a
// suggestion for near misses), and unexpected-value for a value or values an
// operator does not use. Without it unknown keys are ignored.
//
// # Capabilities and conditions
//
// "*" matches every capability; a pattern with "*" segments matches a
// capability with the same number of dot-separated segments where each "*"
// stands for exactly one non-empty segment ("payment.*" matches
// "payment.send", not "payment" nor "payment.a.b"); other patterns match
// only themselves. A "*" inside a segment ("pay*") is a bad-value problem.
//
// A path resolves against an Intent (Intent.Resolve): its first segment is a
// top-level ActionIntent field (risk and riskLevel are one field), and
// payload, constraints and requester continue into nested objects and arrays
// ("payload.files.0"). A path that leads nowhere is undefined, and so is an
// empty string field (Go cannot tell it from an absent one) and a zero
// createdAt. Operators follow JavaScript's strict semantics, which the spec
// implies: eq is strict equality without coercion, but all numbers are
// float64 so 1 equals 1.0, and arrays and objects compare element by element
// (a YAML literal can never be the same object as a payload value, so
// reference equality would be useless); neq is the negation of eq, so an
// undefined field is neq every value; gt, gte, lt and lte are false unless
// both sides are numbers; includes tests array elements with eq, or
// substrings when both sides are strings; in is membership by eq of a
// defined field and notIn its negation (true for an undefined field); exists
// means defined and not null, notExists its negation; wildcard is always
// true. An empty and holds, an empty or does not (Parse refuses both).
//
// # Authorization
//
// Engine.Decide follows seed 004 §5: over the policies in load order, it
// keeps the policies that apply to the intent (appliesTo contains "all", the
// intent's workerId or its specialist — this scopes skill-attached policies
// as §4 asks, and every appliesTo-scoped policy alike), collects their rules
// whose capability pattern matches and whose condition holds, and the
// highest priority wins, the first in load order on a tie. No match allows.
// The decision's reason is the rule's reason, else its description.
// Composite composes deciders: the most severe decision wins (deny, then
// require_approval, then allow), the first decider's among equals.
//
// # Severity
//
// The spec lists severity (block, warn, require_approval) without saying
// what it does. This package reads it as the policy's default consequence of
// being broken: how a runtime or reviewer should treat a violation of the
// policy, in particular of its Markdown body, which no engine can enforce.
// It is kept in the model, shown in list output and in the agent context
// ("breaking this policy is blocked"), and reported in Decision.Severity
// for the deciding rule's policy. The engine never changes a rule's action
// because of it: a deny rule in a warn policy still decides deny, and what to
// do with that is the runtime's choice.
//
// # Discovery
//
// Discover searches, in this order (seed 004 §4): <wd>/POLICY.md; then
// <wd>/<policyDir>/POLICY.md for each policy directory in order; then
// <wd>/<policyDir>/<name>/POLICY.md for each policy directory and each
// subdirectory name in lexical order; then <wd>/<skillDir>/<name>/POLICY.md
// likewise, only where SKILL.md or skill.md sits beside it. Load parses what
// Discover finds; a skill-attached policy gets scope skill and appliesTo
// [<skill directory name>] whatever its frontmatter says. When two files
// declare the same name the later one replaces the earlier (seed 004 §10:
// the latest loaded copy is authoritative) and says so in Policy.Replaces.
//
// # Agent context and Codex
//
// BuildPoliciesContext renders each policy as a "# Policy: <name>" section:
// description, scope, applies-to, severity, version, the rules as a list
// ("Forbidden", "Ask first", "Allowed", the conventional body section names)
// and the body as written.
//
// ToCodexExecpolicy emits Codex execpolicy prefix_rule calls (deny becomes
// forbidden, require_approval prompt, allow allow) for rules on a shell
// command capability (IsCommandCapability) whose condition amounts to
// command prefixes: payload.command eq, includes or in (the string's words;
// eq then also matches longer commands and includes only matches at the
// start), payload.argv eq or in (lists of words), payload.argv.N eq or in,
// and their combinations with and (positions 0..N) and or (several rules).
// Any other rule, and every rule of a policy that does not apply to all
// agents, becomes a "# skipped: <rule id>: <why>" comment. Codex applies the
// strictest matching rule, so priorities are not carried over.
// ToCodexGuardianPrompt lists the rules for an LLM judge, numbered in load
// order and grouped by action, with the decision procedure above and the
// policies' bodies.
//
// # Installing
//
// Install copies the POLICY.md at the root of a local directory, of a git
// repository (cloned with git clone --depth 1, so the committed HEAD), of a
// git URL, or of owner/repo (a GitHub repository) to
// <wd>/.policies/<name>/POLICY.md after validating it.
package policymd
