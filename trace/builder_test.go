package trace

import (
	"testing"

	"github.com/ponens/ponens/schema"
)

// sealLoop folds in, for one builder, actions each carrying one inline
// artifact, and returns the allocations per action.
func sealLoop(t *testing.T, setup func(*Builder)) float64 {
	t.Helper()
	b := NewBuilder("r")
	setup(b)
	b.OnSeal = func(*Position) {}
	ev := &schema.Event{Type: schema.TypeAction, Action: &schema.Action{ID: 1, Type: "tool", Artifacts: []schema.Artifact{{ID: "a", Type: "File"}}}}
	return testing.AllocsPerRun(200, func() { b.Add(ev) })
}

// Without an artifact graph nothing keeps a sealed position's products, so
// slim producers must not copy the position: they would only allocate.
func TestSlimProducersWithoutGraphAllocateNothingMore(t *testing.T) {
	plain := sealLoop(t, func(b *Builder) { b.DropPositions(); b.DropGraph() })
	slim := sealLoop(t, func(b *Builder) { b.DropPositions(); b.DropGraph(); b.SlimProducers() })
	if slim > plain {
		t.Fatalf("slim producers without a graph: %.1f allocations per action, %.1f without", slim, plain)
	}
}

// With a graph, every artifact's producer is the slim copy once its position
// is sealed, and the copy holds no event.
func TestSlimProducersPointAtACopyWithoutEvent(t *testing.T) {
	b := NewBuilder("r")
	b.DropPositions()
	b.SlimProducers()
	b.OnSeal = func(p *Position) {
		if p.Event == nil {
			t.Fatalf("OnSeal saw position %d without its event", p.Index)
		}
	}
	for i := range 3 {
		b.Add(&schema.Event{Type: schema.TypeAction, Action: &schema.Action{ID: int64(i), Type: "tool",
			Artifacts: []schema.Artifact{{ID: string(rune('a' + i)), Type: "File"}}}})
	}
	b.Seal()
	if len(b.T.Artifacts) != 3 {
		t.Fatalf("%d artifacts, want 3", len(b.T.Artifacts))
	}
	for i, a := range b.T.Artifacts {
		p := a.Producer
		if p == nil || p.Index != i || p.Event != nil || p.Action.ID != int64(i) {
			t.Fatalf("artifact %d: producer %+v, want a slim position %d with no event", i, p, i)
		}
	}
}
