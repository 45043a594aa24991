package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/monitor/worker"
)

// reloadDebounce gathers the file events of one save (editors write,
// rename and chmod) into one reload.
const reloadDebounce = 300 * time.Millisecond

// ruleWatcher reloads the rules of a serve or worker process on SIGHUP
// and, with rules.watch, when a file under the --rules paths changes, and
// puts them in force on every worker. A rule set with problems is reported
// with the file, line and column of each, and the rules in force stay.
type ruleWatcher struct {
	rf    *ruleFlags
	cfg   config.Config
	hup   chan os.Signal
	files *fsnotify.Watcher // nil without rules.watch
	// named are the rules files given as files (their directories are
	// watched for them); a change to another file there is not a reload.
	// dirs are the rules directories given. Both hold canonical paths.
	named, dirs map[string]bool
}

// watchRules starts listening for SIGHUP and file changes at once, so that
// nothing that happens after it returns is missed; run acts on them.
func watchRules(rf *ruleFlags, cfg config.Config) (*ruleWatcher, error) {
	rw := &ruleWatcher{rf: rf, cfg: cfg, hup: make(chan os.Signal, 1), named: map[string]bool{}, dirs: map[string]bool{}}
	if cfg.Rules.Watch && len(rf.rules) > 0 {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("watching the rules: %w", err)
		}
		for _, p := range rf.rules {
			p = canonical(p)
			file, err := watchPath(fw, p)
			if err != nil {
				fw.Close()
				return nil, fmt.Errorf("watching the rules: %w", err)
			}
			if file {
				rw.named[p] = true
			} else {
				rw.dirs[p] = true
			}
		}
		rw.files = fw
	}
	signal.Notify(rw.hup, syscall.SIGHUP)
	return rw, nil
}

// what says how the rules are reloaded, for the start-up report.
func (rw *ruleWatcher) what() string {
	if rw.files != nil {
		return "reloaded on SIGHUP and when a rules file changes"
	}
	return "reloaded on SIGHUP"
}

// run reloads until ctx ends, then stops watching.
func (rw *ruleWatcher) run(ctx context.Context, log *slog.Logger, out io.Writer, workers []*worker.Worker) error {
	defer signal.Stop(rw.hup)
	var changed <-chan fsnotify.Event
	var watchErrs <-chan error
	if rw.files != nil {
		defer rw.files.Close()
		changed, watchErrs = rw.files.Events, rw.files.Errors
	}
	var due <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-rw.hup:
			reloadRules(ctx, rw.rf, rw.cfg, log, out, workers, "SIGHUP")
		case ev := <-changed:
			if rw.concerns(ev.Name) {
				due = time.After(reloadDebounce)
			}
		case err := <-watchErrs:
			log.Warn("watching the rules", "err", err)
		case <-due:
			due = nil
			reloadRules(ctx, rw.rf, rw.cfg, log, out, workers, "a rules file changed")
		}
	}
}

// watchPath watches a rules file's directory (editors replace files, so the
// file itself would be lost), or a rules directory and its subdirectories;
// file says which p is.
func watchPath(fw *fsnotify.Watcher, p string) (file bool, err error) {
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	if !st.IsDir() {
		return true, fw.Add(filepath.Dir(p))
	}
	return false, filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return fw.Add(path)
	})
}

// concerns reports whether a change to the file name can change the rules:
// one of the files given, or a policy file in a directory given.
func (rw *ruleWatcher) concerns(name string) bool {
	name = canonical(name)
	if rw.named[name] {
		return true
	}
	if !ruleFile(name) {
		return false
	}
	for d := range rw.dirs {
		if strings.HasPrefix(name, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// canonical is p absolute, with the symbolic links of its directory
// resolved (the file itself may be gone: an editor replacing it), so that
// one file named two ways, or as fsnotify reports it, compares equal.
func canonical(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// ruleFile reports whether a changed path can hold rules (ruleset.Load's
// extensions and POLICY.md), so that an editor's swap files do not reload.
func ruleFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json", ".yaml", ".yml", ".md":
		return true
	}
	return false
}

func reloadRules(ctx context.Context, rf *ruleFlags, cfg config.Config, log *slog.Logger, out io.Writer, workers []*worker.Worker, why string) {
	set, err := rf.load(cfg.Rules.HighStakesPaths, cfg.Rules.Enforce)
	if err != nil {
		log.Error("rules not reloaded: the rules in force stay", "why", why, "problems", err.Error())
		return
	}
	var changes []worker.RuleChange
	for i, w := range workers {
		c, err := w.Reload(ctx, set)
		if err != nil {
			log.Error("rules not reloaded", "worker", i, "err", err)
			return
		}
		if i == 0 {
			changes = c
		}
	}
	var notes []string
	for _, c := range changes {
		switch c.Kind {
		case "added":
			notes = append(notes, "new "+c.VerdictID)
		case "removed":
			notes = append(notes, "removed "+c.ID)
		case "changed":
			notes = append(notes, fmt.Sprintf("%s changed meaning: now %s", c.ID, c.VerdictID))
		}
	}
	summary := "none changed"
	if len(notes) > 0 {
		summary = strings.Join(notes, "; ")
	}
	fmt.Fprintf(out, "rules     reloaded (%s): %d in force; %s\n", why, len(set.Rules), summary)
}
