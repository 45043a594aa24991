package worker

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/ponens/ponens/monitor"
)

// TestEncodeCheckpoint: the hand-written checkpoint encoding decodes to the
// checkpoint it stands for, whatever the run ids hold.
func TestEncodeCheckpoint(t *testing.T) {
	eng, errs := monitor.NewEngine(rules(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	p := &partition{eng: eng, lastSeq: 1234, runs: map[string]*runState{}, endedOrder: []string{"done", "é\"\\"},
		ended: map[string]string{"done": "run.finish at seq 2", "é\"\\": "idle for 1m0s after seq 3, without run.finish"}}
	want := checkpoint{Seq: 1234, Runs: map[string]runMark{}, Ended: p.endedOrder, EndedHow: p.ended, Rules: p.ruleIDs()}
	for i, id := range []string{"plain", "with \"quotes\" and \\", "ünïcode ✓", "line\nbreak\ttab\x01", "<html>&"} {
		p.runs[id] = &runState{first: uint64(10 * i), next: uint64(i + 1)}
		want.Runs[id] = runMark{First: uint64(10 * i), Next: uint64(i + 1)}
	}
	p.runs["plain"].skipped = [][2]uint64{{3, 3}, {7, 9}}
	p.runs["plain"].dropped = []uint64{41, 57}
	want.Runs["plain"] = runMark{First: 0, Next: 1, Skipped: [][2]uint64{{3, 3}, {7, 9}}, Dropped: []uint64{41, 57}}
	data, err := p.encodeCheckpoint(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got checkpoint
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if got.Seq != want.Seq || !maps.EqualFunc(got.Runs, want.Runs, func(a, b runMark) bool {
		return a.First == b.First && a.Next == b.Next && slices.Equal(a.Skipped, b.Skipped) && slices.Equal(a.Dropped, b.Dropped)
	}) || !slices.Equal(got.Ended, want.Ended) || !maps.Equal(got.EndedHow, want.EndedHow) || !slices.Equal(got.Rules, want.Rules) {
		t.Errorf("decoded %+v\nwant    %+v", got, want)
	}
	empty := &partition{eng: eng, runs: map[string]*runState{}}
	data, err = empty.encodeCheckpoint(nil)
	if err != nil {
		t.Fatal(err)
	}
	var none checkpoint
	if err := json.Unmarshal(data, &none); err != nil || len(none.Runs) != 0 || none.Rules == nil {
		t.Errorf("empty checkpoint %s: %+v, %v", data, none, err)
	}
}
