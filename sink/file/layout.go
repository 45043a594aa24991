package file

import (
	"fmt"
	"github.com/ponens/ponens/schema"
	"path"
	"path/filepath"
	"strings"
)

// Source is one run of a trace file, as a check reads it.
type Source struct {
	File  string // the trace file's path
	RunID string
	// Multi is set when the file holds several runs: each run is then a
	// trace of its own, with its own id and verdict stream.
	Multi bool
}

// Place is where a source goes in the artifacts of a check.
type Place struct {
	// ID is the trace id: the shortest trailing suffix of the file's
	// absolute path (whole path elements, slash-separated) that no other
	// file of the check shares, with "#" and the run id added for a file
	// of several runs.
	ID string
	// Verdicts is the path of the verdict stream, beside the trace file;
	// see StreamPath.
	Verdicts string
}

// StreamPath returns the path of src's verdict stream: beside the trace
// file, named after it without its extension and with .verdicts.jsonl
// added (runs/a.jsonl → runs/a.verdicts.jsonl, t.json → t.verdicts.jsonl).
// A run of a file of several runs is named
// <name>.<runId>.verdicts.jsonl, every character of the run id outside
// [A-Za-z0-9._-] replaced by '_'.
func StreamPath(src Source) string {
	base := filepath.Base(src.File)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if name == "" { // a dot file such as .trace
		name = base
	}
	if src.Multi {
		name += "." + safeName(src.RunID)
	}
	return filepath.Join(filepath.Dir(src.File), name+".verdicts.jsonl")
}

// safeName replaces every character of s outside [A-Za-z0-9._-] by '_'.
func safeName(s string) string { return schema.SafeName(s) }

// Layout gives every source its trace id and verdict stream path, in
// order: beside its trace file (StreamPath), or, when verdictsDir is not
// empty, under verdictsDir at the trace id's path (the id's directories,
// then the stream's name), which the ids keep apart. It fails when a source is listed twice (the same run of the same
// file), or when two verdict streams, or a verdict stream and a trace file,
// would share a path, so that nothing is overwritten by accident.
func Layout(srcs []Source, verdictsDir string) ([]Place, error) {
	n := len(srcs)
	elems := make([][]string, n)
	abs := make([]string, n)
	for i, s := range srcs {
		a, err := filepath.Abs(s.File)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", s.File, err)
		}
		abs[i] = a
		elems[i] = strings.Split(filepath.ToSlash(a), "/")
	}
	seen := make(map[[2]string]int, n)
	for i, s := range srcs {
		key := [2]string{abs[i], s.RunID}
		if j, dup := seen[key]; dup {
			if s.Multi {
				return nil, fmt.Errorf("trace %s: run %s is listed twice (also as %s)", s.File, s.RunID, srcs[j].File)
			}
			return nil, fmt.Errorf("trace %s is listed twice (also as %s)", s.File, srcs[j].File)
		}
		seen[key] = i
	}

	// Name the files apart: start every file's name at its base name and
	// lengthen, one path element at a time, every name that another file
	// shares, until none is shared. Distinct files always end up apart.
	files := make(map[string][]string) // absolute path → elements
	for i, a := range abs {
		files[a] = elems[i]
	}
	k := make(map[string]int, len(files))
	for a := range files {
		k[a] = 1
	}
	name := func(a string) string {
		e := files[a]
		return strings.Join(e[len(e)-min(k[a], len(e)):], "/")
	}
	for {
		groups := make(map[string][]string, len(files))
		for a := range files {
			groups[name(a)] = append(groups[name(a)], a)
		}
		shared := false
		for _, g := range groups {
			if len(g) < 2 {
				continue
			}
			shared = true
			for _, a := range g {
				if k[a] < len(files[a]) {
					k[a]++
				}
			}
		}
		if !shared {
			break
		}
	}
	ids := make([]string, n)
	named := make(map[string]int, n)
	for i, s := range srcs {
		ids[i] = name(abs[i])
		if s.Multi {
			ids[i] += "#" + s.RunID
		}
		if j, taken := named[ids[i]]; taken {
			return nil, fmt.Errorf("traces %s and %s cannot be named apart: both are %q", srcs[j].File, s.File, ids[i])
		}
		named[ids[i]] = i
	}

	places := make([]Place, n)
	owner := make(map[string]string, 2*n) // absolute path → what is there
	for i, a := range abs {
		owner[a] = "the trace file " + srcs[i].File
	}
	for i, s := range srcs {
		places[i] = Place{ID: ids[i], Verdicts: StreamPath(s)}
		if verdictsDir != "" {
			places[i].Verdicts = filepath.Join(verdictsDir, filepath.FromSlash(path.Dir(name(abs[i]))), filepath.Base(places[i].Verdicts))
		}
		a, err := filepath.Abs(places[i].Verdicts)
		if err != nil {
			return nil, fmt.Errorf("trace %s: %w", s.File, err)
		}
		if other, taken := owner[a]; taken {
			return nil, fmt.Errorf("trace %s: its verdict stream %s would overwrite %s", ids[i], places[i].Verdicts, other)
		}
		owner[a] = "the verdict stream of " + ids[i]
	}
	return places, nil
}
