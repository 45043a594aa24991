package schema

import "slices"

// Run is the events of one run, in stream order.
type Run struct {
	ID     string
	Events []Event
}

// SplitRuns groups events by runId, keeping their order within each run;
// the runs come in the order of their first event. When all events are of
// one run, that run's Events is events itself, not a copy.
func SplitRuns(events []Event) []Run {
	if len(events) > 0 && !slices.ContainsFunc(events, func(e Event) bool { return e.RunID != events[0].RunID }) {
		return []Run{{ID: events[0].RunID, Events: events}}
	}
	var runs []Run
	index := make(map[string]int)
	for _, e := range events {
		i, ok := index[e.RunID]
		if !ok {
			i = len(runs)
			index[e.RunID] = i
			runs = append(runs, Run{ID: e.RunID})
		}
		runs[i].Events = append(runs[i].Events, e)
	}
	return runs
}
