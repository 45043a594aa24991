package main

import (
	"context"
	"errors"
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
		rw.files = fw
		if err := rw.watch(); err != nil {
			fw.Close()
			return nil, fmt.Errorf("watching the rules: %w", err)
		}
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

// close stops watching. A SIGHUP then has its default effect again.
func (rw *ruleWatcher) close() {
	signal.Stop(rw.hup)
	if rw.files != nil {
		rw.files.Close()
	}
}

// run reloads until ctx ends. A SIGHUP or a change that came between
// watchRules and run (while the command waited for NATS) is acted on
// first.
func (rw *ruleWatcher) run(ctx context.Context, log *slog.Logger, out io.Writer, workers []*worker.Worker) error {
	var changed <-chan fsnotify.Event
	var watchErrs <-chan error
	if rw.files != nil {
		changed, watchErrs = rw.files.Events, rw.files.Errors
	}
	var due <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-rw.hup:
			reloadRules(ctx, rw.rf, rw.cfg, log, out, workers, "SIGHUP")
			if rw.files != nil {
				if err := rw.watch(); err != nil {
					log.Warn("watching the rules", "err", err)
				}
			}
		case ev := <-changed:
			if rw.concerns(ev.Name) {
				due = time.After(reloadDebounce)
			}
		case err := <-watchErrs:
			log.Warn("watching the rules", "err", err)
		case <-due:
			due = nil
			reloadRules(ctx, rw.rf, rw.cfg, log, out, workers, "a rules file changed")
			if err := rw.watch(); err != nil {
				log.Warn("watching the rules", "err", err)
			}
		}
	}
}

// watch watches what the rules paths name now: for a rules file, the
// directory of the name given and of the file it links to (editors replace
// files, so the file itself would be lost); for a rules directory, it and
// every directory under it. Called again after each reload, it picks up
// new subdirectories and re-pointed links (adding a watch twice is
// harmless).
func (rw *ruleWatcher) watch() error {
	for _, p := range rw.rf.rules {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			d := resolve(p)
			rw.dirs[d] = true
			if err := watchTree(rw.files, d); err != nil {
				return err
			}
			continue
		}
		for _, f := range []string{named(p), resolve(p)} {
			rw.named[f] = true
			if err := rw.files.Add(filepath.Dir(f)); err != nil {
				return err
			}
		}
	}
	return nil
}

// watchTree watches dir and every directory under it.
func watchTree(fw *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return fw.Add(path)
	})
}

// concerns reports whether a change to the file name can change the rules:
// one of the files given (by its name or the file it links to), or a
// policy file, or a new directory, in a directory given.
func (rw *ruleWatcher) concerns(name string) bool {
	n := named(name)
	if rw.named[n] {
		return true
	}
	st, err := os.Stat(n)
	isDir := err == nil && st.IsDir()
	if !isDir && !ruleFile(n) {
		return false
	}
	for d := range rw.dirs {
		if strings.HasPrefix(n, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resolve is p absolute with every symbolic link resolved (on the path as
// given, so that "link/.." means what the system makes of it); p itself if
// it cannot be resolved.
func resolve(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// named is p absolute with the links of its directory resolved but not p
// itself: the name a change to p (or to a link p is) is reported under.
func named(p string) string {
	dir, base := ".", p // not filepath.Dir: it would clean "link/.." away as text
	if i := strings.LastIndexByte(p, filepath.Separator); i >= 0 {
		dir, base = p[:i+1], p[i+1:]
	}
	return filepath.Join(resolve(dir), base)
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
	set, err := rf.load(cfg.Rules, cfg.Rules.Enforce)
	if err != nil {
		log.Error("rules not reloaded: the rules in force stay", "why", why, "problems", err.Error())
		return
	}
	var changes []worker.RuleChange
	started := false
	for i, w := range workers {
		c, err := w.Reload(ctx, set)
		if errors.Is(err, worker.ErrStarting) {
			log.Warn("rules reloaded before the worker started", "why", why, "worker", i, "note", err.Error())
			continue
		}
		if err != nil {
			log.Error("rules not reloaded", "worker", i, "err", err)
			return
		}
		if !started {
			changes, started = c, true
		}
	}
	if !started && len(workers) > 0 {
		fmt.Fprintf(out, "rules     reloaded (%s): %d in force when the workers start\n", why, len(set.Rules))
		return
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
