package schema_test

import (
	"bytes"
	"reflect"
	"runtime"
	"testing"

	"github.com/ponens/ponens/schema"
)

// retained decodes a copy of src and returns the heap its events hold:
// what is in use after a collection while they are alive, less what is in
// use after one once they are dropped (measured this way round, garbage
// left by what ran before, which a collection may or may not find at the
// first reading, does not count).
func retained(t *testing.T, decode func([]byte) ([]schema.Event, bool), src []byte) uint64 {
	t.Helper()
	var ms runtime.MemStats
	events, ok := decode(bytes.Clone(src))
	if !ok {
		t.Fatal("not decoded")
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	with := ms.HeapAlloc
	runtime.KeepAlive(events) // alive up to here, garbage from here on
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return with - min(with, ms.HeapAlloc)
}

// TestDecodeReferenceMemory: the events of a reference trace share nothing
// with its bytes (overwriting them changes no event), and hold no more
// than the general conversion's events do, per action, which is a few
// hundred bytes; neither grows faster than the trace.
func TestDecodeReferenceMemory(t *testing.T) {
	fast := func(data []byte) ([]schema.Event, bool) { return schema.DecodeReferenceFast(data) }
	slow := func(data []byte) ([]schema.Event, bool) {
		events, _, err := schema.DecodeReferenceGeneral("f.json", data)
		return events, err == nil
	}
	perAction := map[string][]float64{}
	for _, n := range []int{10000, 40000} {
		data := generatedReference(t, n)
		for _, c := range []struct {
			name   string
			decode func([]byte) ([]schema.Event, bool)
		}{{"fast", fast}, {"slow", slow}} {
			held := retained(t, c.decode, data)
			perAction[c.name] = append(perAction[c.name], float64(held)/float64(n))
		}
		copied := bytes.Clone(data)
		events, _ := schema.DecodeReferenceFast(copied)
		want, _ := schema.DecodeReferenceFast(data)
		clear(copied)
		if !reflect.DeepEqual(events, want) {
			t.Fatalf("%d actions: overwriting the trace's bytes changed its events", n)
		}
	}
	t.Logf("heap held per action (10k, 40k actions): fast %.0f, %.0f B; slow %.0f, %.0f B",
		perAction["fast"][0], perAction["fast"][1], perAction["slow"][0], perAction["slow"][1])
	for i := range 2 {
		if f, s := perAction["fast"][i], perAction["slow"][i]; f > s || f > 850 {
			t.Errorf("fast conversion holds %.0f B per action, the general one %.0f B: want at most the same, and under 850 B", f, s)
		}
	}
	if f := perAction["fast"]; f[1] > 1.2*f[0] {
		t.Errorf("held per action grows with the trace: %.0f B at 10k actions, %.0f B at 40k", f[0], f[1])
	}
}

// TestEachReferenceEventMemory: handing a reference trace's events one at
// a time holds, besides the trace's bytes, a few dozen bytes per action
// (the index), not the events: measured with the events handed so far
// dropped, halfway through and at the last event, on traces of 10k and
// 40k actions.
func TestEachReferenceEventMemory(t *testing.T) {
	for _, n := range []int{10000, 40000} {
		data := generatedReference(t, n)
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC() // what pools kept goes at the second
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		var peak uint64
		handed := 0
		ok := schema.EachReferenceEvent(data, func(e *schema.Event) {
			handed++
			if handed == n/2 || e.Type == schema.TypeRunFinish {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc-min(ms.HeapAlloc, before))
			}
		})
		runtime.KeepAlive(data)
		if !ok || handed < n {
			t.Fatalf("%d actions: handed %d events, ok %v", n, handed, ok)
		}
		t.Logf("%d actions: %.0f B per action held while handing them", n, float64(peak)/float64(n))
		if perAction := float64(peak) / float64(n); perAction > 100 {
			t.Errorf("%d actions: %.0f B per action held while handing them, want under 100 (decoded whole, they take about 780)", n, perAction)
		}
	}
}
