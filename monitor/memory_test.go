package monitor

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ponens/ponens/schema"
)

// TestAddEncodedEndCitesTheWholeLastEvent: a run fed with AddEncoded keeps
// only the JSON of its last event, yet the verdicts of an end without a
// closing event cite that event whole, as they do after Add.
func TestAddEncodedEndCitesTheWholeLastEvent(t *testing.T) {
	eng := reviewEngine(t, false, "F Deploy", "G(EditFile → high_stakes_path)")
	var s stream
	start := s.add(schema.Event{Type: schema.TypeRunStart, Start: &schema.RunStart{Agent: "a", HighStakesPaths: []string{"payments/"}}})
	edit := s.action(&schema.Action{ID: 1, Type: "EditFile", Status: "completed", Rationale: "fix",
		Evidence:  []schema.Evidence{{Type: "FileRef", Ref: "payments/refund.py"}},
		Artifacts: []schema.Artifact{{ID: "d1", Type: "Diff", Payload: json.RawMessage(`{"lines":3}`)}}})

	ends := map[string][]schema.VerdictEvent{}
	for _, encoded := range []bool{false, true} {
		r := eng.NewRun("r")
		for _, ev := range []*schema.Event{start, edit} {
			data, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := schema.DecodeEvent("event", data)
			if err != nil {
				t.Fatal(err)
			}
			var vs []schema.VerdictEvent
			if encoded {
				vs, err = r.AddEncoded(&decoded, data)
			} else {
				vs, err = r.Add(&decoded)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if v.Status == schema.StatusViolated {
					t.Errorf("encoded=%v: %s violated at seq %d: the slim run.start lost its high-stakes paths", encoded, v.Rule.ID, ev.Seq)
				}
			}
		}
		if encoded && r.last != nil {
			t.Error("AddEncoded kept the decoded last event")
		}
		key := map[bool]string{false: "Add", true: "AddEncoded"}[encoded]
		ends[key] = append([]schema.VerdictEvent(nil), r.End()...)
	}
	if len(ends["Add"]) == 0 || ends["Add"][0].Status != schema.StatusUnresolved {
		t.Fatalf("End after Add gave %+v, want F Deploy unresolved", ends["Add"])
	}
	for i, v := range ends["AddEncoded"] {
		if v.Cause == nil || v.Cause.Event.Seq != edit.Seq || v.Cause.Event.Action == nil || v.Cause.Event.Action.Artifacts[0].ID != "d1" {
			t.Errorf("AddEncoded end verdict %d cites %+v, want the whole edit event", i, v.Cause)
		}
	}
	if !reflect.DeepEqual(ends["Add"], ends["AddEncoded"]) {
		t.Errorf("end verdicts differ:\nAdd        %+v\nAddEncoded %+v", ends["Add"], ends["AddEncoded"])
	}
}

// TestProducerFieldKeepsProducers: a rule that reads an artifact's producer
// gets the producing action whole, though the run drops its positions; rules
// that do not read it leave the artifact graph with slim producers only.
func TestProducerFieldKeepsProducers(t *testing.T) {
	const rule = `G(EditFile → ∀ x ∈ inputs(a) . x.producer.type = "Verify")`
	eng := reviewEngine(t, false, rule)
	if !eng.keepProducers || eng.keepPositions {
		t.Fatalf("keepProducers %v, keepPositions %v: want producers kept, positions dropped", eng.keepProducers, eng.keepPositions)
	}
	if slim := reviewEngine(t, false, `G(EditFile → P_chain(VerificationResult))`); slim.keepProducers {
		t.Error("a lineage rule keeps whole producers")
	}
	for _, producer := range []string{"Verify", "Guess"} {
		var s stream
		s.add(schema.Event{Type: schema.TypeRunStart, Start: &schema.RunStart{}})
		s.action(&schema.Action{ID: 1, Type: producer, Status: "completed", Outputs: []string{"vr-1"},
			Artifacts: []schema.Artifact{{ID: "vr-1", Type: "VerificationResult"}}})
		s.action(&schema.Action{ID: 2, Type: "ReadFile", Status: "completed"}) // the Verify is long sealed
		s.action(&schema.Action{ID: 3, Type: "EditFile", Status: "completed", Inputs: []string{"vr-1"}})
		s.add(schema.Event{Type: schema.TypeRunFinish, End: &schema.RunEnd{}})
		r := eng.NewRun("r")
		for i := range s.events {
			if _, err := r.Add(&s.events[i]); err != nil {
				t.Fatal(err)
			}
		}
		want := schema.StatusSatisfied
		if producer != "Verify" {
			want = schema.StatusViolated
		}
		if res := r.Results(); len(res) != 1 || res[0].Status != want {
			t.Errorf("producer %s: results %+v, want %s", producer, res, want)
		}
	}
}
