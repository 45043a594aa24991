package main

import (
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

// storeCheck writes the checked runs' events and verdict streams into the
// embedded store at dir, in one commit.
func storeCheck(lib, dir string, runs []namedRun, streams [][]schema.VerdictEvent) error {
	e, err := chdb.Open(chdb.Options{Lib: lib, Path: dir})
	if err != nil {
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	defer e.Close()
	if _, err := chdb.Migrate(e); err != nil {
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	a := chdb.NewStore(e).Appender()
	var pos uint64
	for i, nr := range runs {
		if err := sink.AppendRun(a, nr.Run.Events, streams[i], &pos); err != nil {
			return exitWith(exitBadInput, "%s: %v", nr.File, err)
		}
	}
	if err := a.Commit(); err != nil {
		a.Rollback()
		return exitWith(exitUnavailable, "--store %s: %v", dir, err)
	}
	return nil
}
