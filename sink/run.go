package sink

import (
	"encoding/json"
	"fmt"

	"github.com/ponens/ponens/schema"
)

// AppendRun appends one run's events and verdict stream, read from files
// rather than a stream: they take the positions after *pos, events first,
// and *pos is advanced past them. Each verdict is stamped with the time of
// the run's event at its seq. Appending the same runs in the same order
// again gives the same positions, so a store replaces the rows instead of
// adding them.
func AppendRun(a Appender, events []schema.Event, stream []schema.VerdictEvent, pos *uint64) error {
	at := make(map[uint64]schema.StreamMeta, len(events))
	for i := range events {
		*pos++
		body, err := json.Marshal(&events[i])
		if err != nil {
			return fmt.Errorf("run %s: event seq %d: %w", events[i].RunID, events[i].Seq, err)
		}
		m := schema.StreamMeta{Seq: *pos, Time: events[i].TS}
		at[events[i].Seq] = m
		if err := a.AppendEvent(&events[i], body, m); err != nil {
			return err
		}
	}
	for i := range stream {
		*pos++
		if err := a.AppendVerdict(&stream[i], schema.StreamMeta{Seq: *pos, Time: at[stream[i].Seq].Time}); err != nil {
			return err
		}
	}
	return nil
}
