package policymd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// FileName is the name of a policy file.
const FileName = "POLICY.md"

// Default discovery directories (seed 004 §4), relative to the working
// directory.
var (
	DefaultPolicyDirs = []string{".policies", ".devin/policies", ".sidian/policies"}
	DefaultSkillDirs  = []string{".devin/skills", ".sidian/skills", ".opencode/skills", ".claude/skills"}
)

// DiscoverOptions configure Discover and Load.
type DiscoverOptions struct {
	// PolicyDirs and SkillDirs are relative to the working directory; nil
	// means DefaultPolicyDirs and DefaultSkillDirs (an empty non-nil slice
	// searches none).
	PolicyDirs []string
	SkillDirs  []string
	// Strict is passed to Parse by Load.
	Strict bool
}

// Location is a discovered POLICY.md file.
type Location struct {
	// Path is the working directory joined with the file's relative path.
	Path   string `json:"path"`
	Origin Origin `json:"origin"`
	// Skill is the skill directory's name for OriginSkill.
	Skill string `json:"skill,omitempty"`
}

// Discover returns the POLICY.md files under workingDir in the order of seed
// 004 §4: <wd>/POLICY.md; <wd>/<policyDir>/POLICY.md for every policy
// directory in order; <wd>/<policyDir>/<name>/POLICY.md for every policy
// directory in order and its subdirectories in lexical order;
// <wd>/<skillDir>/<name>/POLICY.md for every skill directory in order and its
// subdirectories in lexical order, only where <name> also holds SKILL.md or
// skill.md. Missing directories are skipped; a file reachable twice is
// listed once. Symbolic links are followed. Other I/O errors are returned
// together with everything found.
func Discover(workingDir string, opts DiscoverOptions) ([]Location, error) {
	policyDirs, skillDirs := opts.PolicyDirs, opts.SkillDirs
	if policyDirs == nil {
		policyDirs = DefaultPolicyDirs
	}
	if skillDirs == nil {
		skillDirs = DefaultSkillDirs
	}
	var (
		out  []Location
		errs []error
		seen = map[string]bool{}
	)
	add := func(path string, origin Origin, skill string) {
		ok, err := isFile(path)
		if err != nil {
			errs = append(errs, err)
		}
		if !ok {
			return
		}
		key := filepath.Clean(path)
		if abs, err := filepath.Abs(path); err == nil {
			key = abs
		}
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, Location{Path: path, Origin: origin, Skill: skill})
	}
	add(filepath.Join(workingDir, FileName), OriginRoot, "")
	for _, dir := range policyDirs {
		add(filepath.Join(workingDir, dir, FileName), OriginPolicyDir, "")
	}
	for _, dir := range policyDirs {
		subs, err := subdirs(filepath.Join(workingDir, dir))
		if err != nil {
			errs = append(errs, err)
		}
		for _, name := range subs {
			add(filepath.Join(workingDir, dir, name, FileName), OriginPolicySub, "")
		}
	}
	for _, dir := range skillDirs {
		subs, err := subdirs(filepath.Join(workingDir, dir))
		if err != nil {
			errs = append(errs, err)
		}
		for _, name := range subs {
			skillDir := filepath.Join(workingDir, dir, name)
			hasSkill := false
			for _, marker := range []string{"SKILL.md", "skill.md"} {
				if ok, _ := isFile(filepath.Join(skillDir, marker)); ok {
					hasSkill = true
				}
			}
			if hasSkill {
				add(filepath.Join(skillDir, FileName), OriginSkill, name)
			}
		}
	}
	return out, errors.Join(errs...)
}

// isFile reports whether path is (a symbolic link to) a regular file; a
// missing path is not an error.
func isFile(path string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isNotDir(err) {
			return false, nil
		}
		return false, err
	}
	return fi.Mode().IsRegular(), nil
}

// isNotDir reports whether err says a path component is not a directory.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// subdirs returns the names of the directories (or symbolic links to
// directories) in dir, sorted; a missing dir has none.
func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// shadowing refuses p, a skill's policy, when an earlier project policy
// (the root, a policy directory) has its name: a lower-trust location may
// not silently replace the project's policy. It returns the problem, or
// nil.
func shadowing(loaded []*Policy, p *Policy) *Problem {
	if p.Origin != OriginSkill {
		return nil
	}
	for _, q := range loaded {
		if q.Name == p.Name && q.Origin != OriginSkill {
			return &Problem{File: p.File, Line: 1, Col: 1, Code: CodeShadowed,
				Message: fmt.Sprintf("policy %q of skill %q has the name of the project policy %s, which it would replace: refused, %s stays in force; rename one of them", p.Name, p.Skill, q.File, q.File)}
		}
	}
	return nil
}

// Load discovers (see Discover) and parses every POLICY.md under workingDir
// and returns the valid policies in discovery order, which is the load order
// the Engine breaks ties with. A skill-attached policy gets scope skill and
// appliesTo [<skill directory name>] whatever its frontmatter says. When two
// policies share a name the later one replaces the earlier (seed 004 §10:
// the latest loaded copy is authoritative) and lists its file in Replaces.
// The error holds the Problems of every invalid file (in discovery order) and
// any I/O error; the valid policies are returned all the same.
func Load(workingDir string, opts DiscoverOptions) ([]*Policy, error) {
	locs, err := Discover(workingDir, opts)
	var (
		out   []*Policy
		probs Problems
		errs  []error
	)
	if err != nil {
		errs = append(errs, err)
	}
	for _, loc := range locs {
		p, err := ParseFile(loc.Path, Options{Strict: opts.Strict})
		if err != nil {
			var ps Problems
			if errors.As(err, &ps) {
				probs = append(probs, ps...)
			} else {
				errs = append(errs, err)
			}
			continue
		}
		p.Origin, p.Skill = loc.Origin, loc.Skill
		if loc.Origin == OriginSkill {
			p.Scope = ScopeSkill
			p.AppliesTo = []string{loc.Skill}
		}
		if shadow := shadowing(out, p); shadow != nil {
			probs = append(probs, *shadow)
			continue
		}
		for i, q := range out {
			if q.Name == p.Name {
				p.Replaces = append(append(p.Replaces, q.Replaces...), q.File)
				out = append(out[:i], out[i+1:]...)
				break
			}
		}
		out = append(out, p)
	}
	if len(probs) > 0 {
		if len(errs) == 0 {
			return out, probs
		}
		errs = append([]error{probs}, errs...)
	}
	return out, errors.Join(errs...)
}
