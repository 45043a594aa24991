package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ponens/ponens/schema"
)

// Receipts records, per run, which events a Publisher got acknowledged and
// which not, so that a publish cut short can say exactly what to send
// again. It is safe for concurrent use.
type Receipts struct {
	mu        sync.Mutex
	runs      map[string]*receipt
	order     []string // runIds in the order first expected
	conflicts []conflict
	firstErr  error // the first refusal or failure other than a conflict
}

// conflict is an event refused as a conflicting duplicate, and why.
type conflict struct {
	ev  *schema.Event
	err error
}

// receipt is one run's outcome so far.
type receipt struct {
	acked, open, conflicting map[uint64]bool
}

// RunReceipt is the outcome of one run: the seqs acknowledged (stored, or
// stored before), the seqs not acknowledged (refused, abandoned, never
// sent) and the seqs that conflict with other content stored under the
// same run and seq, each sorted.
type RunReceipt struct {
	RunID       string
	Acked       []uint64
	Unacked     []uint64
	Conflicting []uint64
}

// NewReceipts returns empty Receipts.
func NewReceipts() *Receipts { return &Receipts{runs: map[string]*receipt{}} }

// Expect records ev as not acknowledged yet: until Done says otherwise, it
// is reported as unacknowledged.
func (r *Receipts) Expect(ev *schema.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.runs[ev.RunID]
	if rc == nil {
		rc = &receipt{acked: map[uint64]bool{}, open: map[uint64]bool{}, conflicting: map[uint64]bool{}}
		r.runs[ev.RunID] = rc
		r.order = append(r.order, ev.RunID)
	}
	rc.open[ev.Seq] = true
}

// Done returns the callback for PublishReport that records ev's outcome.
func (r *Receipts) Done(ev *schema.Event) func(error) {
	run, seq := ev.RunID, ev.Seq
	return func(err error) {
		conflicting := errors.Is(err, schema.ErrConflictingDuplicate)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil && !conflicting {
			if r.firstErr == nil {
				r.firstErr = err
			}
			return // stays unacknowledged
		}
		rc := r.runs[run]
		if rc == nil {
			return
		}
		delete(rc.open, seq)
		if conflicting {
			rc.conflicting[seq] = true
			r.conflicts = append(r.conflicts, conflict{ev, err})
			return
		}
		rc.acked[seq] = true
	}
}

// Incomplete returns the runs with at least one event not acknowledged or
// conflicting, in the order they were first expected.
func (r *Receipts) Incomplete() []RunReceipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []RunReceipt
	for _, id := range r.order {
		rc := r.runs[id]
		if len(rc.open) == 0 && len(rc.conflicting) == 0 {
			continue
		}
		out = append(out, RunReceipt{RunID: id, Acked: sortedKeys(rc.acked), Unacked: sortedKeys(rc.open), Conflicting: sortedKeys(rc.conflicting)})
	}
	return out
}

func sortedKeys(m map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// String is one line: the run, and its seqs acknowledged and not, as ranges
// ("run r1: acknowledged seq 1-40; not acknowledged seq 41-50").
func (rr RunReceipt) String() string {
	acked := "none"
	if len(rr.Acked) > 0 {
		acked = "seq " + Ranges(rr.Acked)
	}
	s := fmt.Sprintf("run %s: acknowledged %s", strconv.Quote(rr.RunID), acked)
	if len(rr.Unacked) > 0 {
		s += "; not acknowledged seq " + Ranges(rr.Unacked)
	}
	if len(rr.Conflicting) > 0 {
		s += "; conflicting seq " + Ranges(rr.Conflicting) + " (other content is stored under the same seq)"
	}
	return s
}

// Err is the first error an event failed with, other than a conflicting
// duplicate (which Conflicts counts), or nil.
func (r *Receipts) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstErr
}

// Conflicts is how many events were refused as conflicting duplicates.
func (r *Receipts) Conflicts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conflicts)
}

// DeadLetterConflicts sends each event refused as a conflicting duplicate
// to dl (reason conflicting-duplicate) from source.
func (r *Receipts) DeadLetterConflicts(ctx context.Context, dl *DeadLetters, source string) error {
	r.mu.Lock()
	cs := slices.Clone(r.conflicts)
	r.mu.Unlock()
	for _, c := range cs {
		data, err := json.Marshal(c.ev)
		if err != nil {
			return err
		}
		if err := dl.Send(ctx, schema.ReasonConflictingDuplicate, source, c.err, data); err != nil {
			return err
		}
	}
	return nil
}

// Ranges writes sorted seqs as comma-separated ranges: 1-3,5,7-9.
func Ranges(seqs []uint64) string {
	var b strings.Builder
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(seqs[i], 10))
		if j > i {
			b.WriteString("-" + strconv.FormatUint(seqs[j], 10))
		}
		i = j + 1
	}
	return b.String()
}
