package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/policy/policymd"
)

// The POLICY.md subcommands of `ponens policy`.
func init() {
	policySubcommands = append(policySubcommands,
		newPolicyValidateCommand,
		newPolicyContextCommand,
		newPolicyCodexCommand,
		newPolicyInstallCommand,
		newPolicyListCommand,
	)
}

func newPolicyValidateCommand() *cobra.Command {
	var strict, asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [--strict] [--json] PATH...",
		Short: "Validate POLICY.md files",
		Long: `Validate POLICY.md files. A PATH is a file (of any name) or a directory,
searched recursively for files named POLICY.md. Every problem is printed as
file:line:col: code: message. Exit status 0 when every file is valid, 2
otherwise.`,
		Example: `  ponens policy validate examples/rules/POLICY.md
  ponens policy validate --strict --json examples/rules`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitWith(exitBadInput, "ponens policy validate: give at least one file or directory")
			}
			return runPolicyValidate(cmd.OutOrStdout(), args, policymd.Options{Strict: strict}, asJSON)
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "reject unknown fields and values an operator does not use")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

// validateResult is one file's result in validate --json output.
type validateResult struct {
	File     string             `json:"file"`
	Valid    bool               `json:"valid"`
	Problems []policymd.Problem `json:"problems"`
}

func runPolicyValidate(out io.Writer, paths []string, opts policymd.Options, asJSON bool) error {
	var results []validateResult
	for _, path := range paths {
		files, err := policyFiles(path)
		if err != nil {
			results = append(results, validateResult{File: path, Problems: []policymd.Problem{pathProblem(path, err)}})
			continue
		}
		for _, f := range files {
			ps, err := policymd.ValidateFile(f, opts)
			if err != nil {
				ps = policymd.Problems{pathProblem(f, err)}
			}
			if ps == nil {
				ps = policymd.Problems{}
			}
			results = append(results, validateResult{File: f, Valid: len(ps) == 0, Problems: ps})
		}
	}
	bad, nprobs := 0, 0
	for _, r := range results {
		if !r.Valid {
			bad++
		}
		nprobs += len(r.Problems)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return exitWith(exitBadInput, "ponens policy validate: %v", err)
		}
	} else {
		for _, r := range results {
			if r.Valid {
				fmt.Fprintf(out, "%s: valid\n", r.File)
			}
			for _, p := range r.Problems {
				if p.Line == 0 { // about the file as a whole
					fmt.Fprintf(out, "%s: %s: %s\n", p.File, p.Code, p.Message)
				} else {
					fmt.Fprintln(out, p.String())
				}
			}
		}
	}
	if bad > 0 {
		return exitWith(exitBadInput, "ponens policy validate: %d of %d file(s) invalid, %d problem(s)", bad, len(results), nprobs)
	}
	return nil
}

// pathProblem is the problem of a path that cannot be validated: it does
// not exist, holds no POLICY.md, or cannot be read.
func pathProblem(path string, err error) policymd.Problem {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return policymd.Problem{File: path, Code: policymd.CodeNotFound, Message: "no such file or directory"}
	case errors.Is(err, errNoPolicyFile):
		return policymd.Problem{File: path, Code: policymd.CodeNotFound, Message: err.Error()}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return policymd.Problem{File: path, Code: policymd.CodeUnreadable, Message: err.Error()}
}

// errNoPolicyFile: a directory given to validate holds no POLICY.md.
var errNoPolicyFile = fmt.Errorf("a directory without a %s file", policymd.FileName)

// policyFiles expands a validate argument: a file is itself, a directory is
// every POLICY.md below it (skipping .git), in lexical order.
func policyFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == policymd.FileName {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errNoPolicyFile
	}
	return files, nil
}

// loadPolicies discovers and loads the policies under dir; invalid files are
// printed to errOut and make the returned error non-nil (exit 2). The valid
// policies are returned all the same.
func loadPolicies(errOut io.Writer, command, dir string) ([]*policymd.Policy, error) {
	if err := isDir(dir); err != nil {
		return nil, err
	}
	pols, err := policymd.Load(dir, policymd.DiscoverOptions{})
	if err == nil {
		return pols, nil
	}
	var ps policymd.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Fprintln(errOut, p.String())
		}
	}
	if _, only := err.(policymd.Problems); only {
		return pols, exitWith(exitBadInput, "ponens policy %s: %d problem(s) in POLICY.md files under %s", command, len(ps), dir)
	}
	return pols, exitWith(exitBadInput, "ponens policy %s: %s", command, errorWithoutProblems(err))
}

// isDir refuses a --dir that is not a directory.
func isDir(dir string) error {
	if st, err := os.Stat(dir); err != nil {
		return exitWith(exitBadInput, "--dir %s: %v", dir, errors.Unwrap(err))
	} else if !st.IsDir() {
		return exitWith(exitBadInput, "--dir %s: not a directory", dir)
	}
	return nil
}

// errorWithoutProblems renders err without the problem lines already printed.
func errorWithoutProblems(err error) string {
	var parts []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if _, isProbs := e.(policymd.Problems); isProbs {
				parts = append(parts, "invalid POLICY.md files (see above)")
				continue
			}
			parts = append(parts, e.Error())
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}

func newPolicyContextCommand() *cobra.Command {
	var agent, dir string
	cmd := &cobra.Command{
		Use:   "context [--agent ID] [--dir WD]",
		Short: "Render the discovered POLICY.md files as agent system-prompt Markdown",
		Long: `Discover the POLICY.md files of a working directory and render them as
Markdown for an agent's system prompt. With --agent, only the policies whose
appliesTo contains all or that agent id.`,
		Example: `  ponens policy context --dir examples/rules
  ponens policy context --dir examples/rules --agent coder-1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pols, err := loadPolicies(cmd.ErrOrStderr(), "context", dir)
			if err != nil {
				return err
			}
			var text string
			if cmd.Flags().Changed("agent") {
				text = policymd.BuildAgentPoliciesContext(pols, agent)
			} else {
				text = policymd.BuildPoliciesContext(pols)
			}
			if text == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "ponens policy context: no policies apply\n")
			}
			_, err = io.WriteString(cmd.OutOrStdout(), text)
			return err
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only the policies that apply to this agent or skill id")
	cmd.Flags().StringVar(&dir, "dir", ".", "working directory to discover POLICY.md files in")
	return cmd
}

func newPolicyCodexCommand() *cobra.Command {
	cmd := groupCommand("codex", "Convert the discovered POLICY.md files for OpenAI Codex")
	cmd.Example = `  ponens policy codex execpolicy --dir examples/rules
  ponens policy codex guardian --dir examples/rules`
	for _, c := range []struct {
		use, short string
		render     func([]*policymd.Policy) string
	}{
		{"execpolicy", "Print Codex execpolicy prefix rules (Starlark)", policymd.ToCodexExecpolicy},
		{"guardian", "Print a Guardian LLM-judge prompt", policymd.ToCodexGuardianPrompt},
	} {
		var dir string
		sub := &cobra.Command{
			Use:     c.use + " [--dir WD]",
			Short:   c.short,
			Example: "  ponens policy codex " + c.use + " --dir examples/rules",
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				pols, err := loadPolicies(cmd.ErrOrStderr(), "codex "+c.use, dir)
				if err != nil {
					return err
				}
				_, err = io.WriteString(cmd.OutOrStdout(), c.render(pols))
				return err
			},
		}
		sub.Flags().StringVar(&dir, "dir", ".", "working directory to discover POLICY.md files in")
		cmd.AddCommand(sub)
	}
	return cmd
}

func newPolicyInstallCommand() *cobra.Command {
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "install [--dir WD] [--force] SOURCE",
		Short: "Install a published POLICY.md into .policies/<name>/POLICY.md",
		Long: `Install the POLICY.md at the root of SOURCE into WD/.policies/<name>/POLICY.md,
where name is the policy's name. SOURCE is a local directory, a local git
repository, a git URL, or owner/repo. An invalid policy is refused.

A different policy of the same name already installed is refused unless
--force is given, and then replaced; the same policy again changes nothing.
Prints what it did and the path.`,
		Example: `  ponens policy install examples/rules --dir "$(mktemp -d)"
  ponens policy install --force ../shared-policies`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return exitWith(exitBadInput, "give exactly one SOURCE")
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			in, err := policymd.Install(ctx, args[0], dir, policymd.InstallOptions{Replace: force})
			switch {
			case errors.Is(err, policymd.ErrInstalled):
				return exitWith(exitBadInput, "%v (give --force to replace it)", err)
			case err != nil:
				return exitWith(exitBadInput, "%v", err)
			case in.Unchanged:
				fmt.Fprintf(cmd.OutOrStdout(), "unchanged %s (already installed)\n", in.Path)
			case in.Replaced:
				fmt.Fprintf(cmd.OutOrStdout(), "replaced  %s\n", in.Path)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "installed %s\n", in.Path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "working directory to install into")
	cmd.Flags().BoolVar(&force, "force", false, "replace a different policy of the same name")
	return cmd
}

// listEntry is one policy in list --json output.
type listEntry struct {
	Name        string            `json:"name"`
	File        string            `json:"file"`
	Origin      policymd.Origin   `json:"origin"`
	Skill       string            `json:"skill,omitempty"`
	Scope       policymd.Scope    `json:"scope"`
	AppliesTo   []string          `json:"appliesTo"`
	Severity    policymd.Severity `json:"severity"`
	Version     string            `json:"version,omitempty"`
	Description string            `json:"description,omitempty"`
	Rules       int               `json:"rules"`
	Replaces    []string          `json:"replaces,omitempty"`
}

func newPolicyListCommand() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--dir WD] [--json]",
		Short: "List the discovered POLICY.md files",
		Long: `List the POLICY.md files discovered in a working directory, in load order:
name, scope, appliesTo, severity, rule count and file. Invalid files are
reported on standard error and make the exit status 2.`,
		Example: `  ponens policy list --dir examples/rules
  ponens policy list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := isDir(dir); err != nil {
				return err
			}
			pols, loadErr := loadPolicies(cmd.ErrOrStderr(), "list", dir)
			entries := make([]listEntry, 0, len(pols))
			for _, p := range pols {
				entries = append(entries, listEntry{
					Name: p.Name, File: p.File, Origin: p.Origin, Skill: p.Skill,
					Scope: p.Scope, AppliesTo: p.AppliesTo, Severity: p.Severity,
					Version: p.Version, Description: p.Description,
					Rules: len(p.Rules), Replaces: p.Replaces,
				})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(entries); err != nil {
					return err
				}
				return loadErr
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCOPE\tAPPLIES TO\tSEVERITY\tRULES\tFILE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.Name, e.Scope, strings.Join(e.AppliesTo, ","), e.Severity, e.Rules, e.File)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, e := range entries {
				if len(e.Replaces) > 0 {
					fmt.Fprintf(out, "%s (%s) replaces the same-named %s\n", e.Name, e.File, strings.Join(e.Replaces, ", "))
				}
			}
			return loadErr
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "working directory to discover POLICY.md files in")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}
