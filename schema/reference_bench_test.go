package schema_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/schema"
)

// generatedReference returns the reference trace tracegen -reference writes
// for events events: the run gen.WriteStream gives, encoded by
// EncodeReference.
func generatedReference(tb testing.TB, events int) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := gen.WriteStream(&b, 1, events); err != nil {
		tb.Fatal(err)
	}
	evs, err := schema.DecodeJSONL("stream", &b, 0)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := schema.EncodeReference(evs)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkDecodeReference decodes the generated 50k-action reference
// trace (11 MB) of docs/performance.md; it reports the file's MB/s.
func BenchmarkDecodeReference(b *testing.B) {
	data := generatedReference(b, 50000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := schema.DecodeReferenceWarn("50k.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeReferenceGeneratedFastMatchesSlow: on random runs (gen.Run:
// artifacts along lineage, residuals, timestamps) written as reference
// traces, and on the generated trace of the benchmark, the fast
// conversion accepts and gives the general conversion's events.
func TestDecodeReferenceGeneratedFastMatchesSlow(t *testing.T) {
	traces := [][]byte{generatedReference(t, 2000)}
	for seed := range uint64(200) {
		data, err := schema.EncodeReference(gen.Run(rand.New(rand.NewPCG(seed, 1)), fmt.Sprintf("run-%d", seed), gen.RunConfig{MaxActions: 30}))
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, data)
	}
	for i, data := range traces {
		slow, warnings, err := schema.DecodeReferenceSlow("f.json", data)
		if err != nil || warnings != nil {
			t.Fatalf("trace %d: %v %v", i, err, warnings)
		}
		fast, ok := schema.DecodeReferenceFast(data)
		if !ok {
			t.Fatalf("trace %d: the fast conversion gives up on a clean trace:\n%s", i, data)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("trace %d: conversions disagree:\nfast %#v\nslow %#v", i, fast, slow)
		}
	}
}
