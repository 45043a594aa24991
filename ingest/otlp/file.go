package otlp

import (
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
)

// ImportFile converts an exported file (see DecodeFile) with a fresh
// converter: its runs, and the spans it rejected and skipped. Runs whose
// root span is not in the file stay open (no closing event).
func ImportFile(data []byte, name string, t *mapping.Table, opts Options, explain func(where, what string)) (Result, error) {
	batches, err := DecodeFile(data, name)
	if err != nil {
		return Result{}, err
	}
	conv := NewConverter(t, opts)
	all := Result{Skipped: map[string]int{}}
	for _, td := range batches {
		r := conv.Convert(td, explain)
		all.Events = append(all.Events, r.Events...)
		all.Rejected = append(all.Rejected, r.Rejected...)
		for k, n := range r.Skipped {
			all.Skipped[k] += n
		}
	}
	// A file holds finished spans: order each run's events by seq, runs by
	// their first event.
	all.Events = groupRuns(all.Events)
	return all, nil
}

func groupRuns(evs []schema.Event) []schema.Event {
	order := []string{}
	byRun := map[string][]schema.Event{}
	for _, ev := range evs {
		if _, ok := byRun[ev.RunID]; !ok {
			order = append(order, ev.RunID)
		}
		byRun[ev.RunID] = append(byRun[ev.RunID], ev)
	}
	out := make([]schema.Event, 0, len(evs))
	for _, id := range order {
		out = append(out, byRun[id]...)
	}
	return out
}
