package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ponens/ponens/schema"
)

// Importer turns the lines of one transcript into events, in order.
// *claudecode.Importer and *codex.Importer are importers.
type Importer interface {
	Line(n int, data []byte) ([]schema.Event, error)
}

// Options configures a Watcher.
type Options struct {
	// Dir is searched, recursively, for transcripts named *.jsonl.
	Dir string
	// New returns the importer of the transcript at path.
	New func(path string) Importer
	// Publish stores events, in order; it returns once all are stored or
	// with an error (the watcher then tries them again on its next pass).
	Publish func(ctx context.Context, events []schema.Event) error
	// State is the file that keeps how far each transcript was published.
	State string
	// Interval is the time between passes (250ms when 0).
	Interval time.Duration
	// Logger receives lines that cannot be read; nil discards them.
	Logger *slog.Logger
}

// fileState is what the state file keeps of one transcript: the last seq
// of its run that was stored.
type fileState struct {
	Published uint64 `json:"published"`
}

// tail is a transcript being followed.
type tail struct {
	imp    Importer
	offset int64
	line   int
	// published is the last seq stored; events up to it are not sent
	// again, which is how a restarted watcher that reads a transcript
	// from its start publishes each event once.
	published uint64
}

// Watcher follows the transcripts under a directory and publishes the
// events of each as they are written, each once and in order, across
// restarts: after a restart it reads each transcript again from its start
// (an importer needs the whole session to number and relate its events)
// and publishes only the events past the last one the state file says
// was stored.
type Watcher struct {
	opts  Options
	tails map[string]*tail
	saved map[string]fileState
	log   *slog.Logger
}

// New returns a watcher; it reads the state file, if there is one.
func New(opts Options) (*Watcher, error) {
	if opts.Interval <= 0 {
		opts.Interval = 250 * time.Millisecond
	}
	w := &Watcher{opts: opts, tails: map[string]*tail{}, saved: map[string]fileState{}, log: opts.Logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	data, err := os.ReadFile(opts.State)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(data, &w.saved); err != nil {
			return nil, fmt.Errorf("%s: expected the watcher's state (a JSON object of files): %v", opts.State, err)
		}
	}
	return w, nil
}

// Run passes over the directory every Interval until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		if err := w.Pass(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("watch: pass failed; trying again", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass reads what was written since the last pass and publishes it.
func (w *Watcher) Pass(ctx context.Context) error {
	var files []string
	err := filepath.WalkDir(w.opts.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(p) == ".jsonl" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		if err := w.follow(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// follow reads the complete lines of path past its offset, publishes the
// events not yet stored and saves the state.
func (w *Watcher) follow(ctx context.Context, path string) error {
	t, ok := w.tails[path]
	if !ok {
		t = &tail{imp: w.opts.New(path), published: w.saved[path].Published}
		w.tails[path] = t
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() < t.offset {
		// Truncated or replaced: read it again from the start.
		delete(w.tails, path)
		return nil
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil // no complete line yet
	}
	var events []schema.Event
	for _, l := range bytes.Split(data[:end], []byte("\n")) {
		t.line++
		evs, err := t.imp.Line(t.line, l)
		if err != nil {
			w.log.Warn("watch: line skipped", "error", err)
			continue
		}
		for _, ev := range evs {
			if ev.Seq > t.published {
				events = append(events, ev)
			}
		}
	}
	t.offset += int64(end + 1)
	if len(events) > 0 {
		if err := w.opts.Publish(ctx, events); err != nil {
			// Read it all again on the next pass: the importer is rebuilt
			// from the start of the transcript, the stored events skipped.
			delete(w.tails, path)
			return err
		}
		t.published = events[len(events)-1].Seq
	}
	return w.save(path, fileState{Published: t.published})
}

// save records path's state in the state file, atomically.
func (w *Watcher) save(path string, st fileState) error {
	if w.saved[path] == st {
		return nil
	}
	w.saved[path] = st
	data, err := json.MarshalIndent(w.saved, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(w.opts.State), 0o700); err != nil {
		return err
	}
	tmp := w.opts.State + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, w.opts.State)
}
