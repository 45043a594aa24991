package schema_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/ponens/ponens/internal/avxstate"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/schema"
	segjson "github.com/segmentio/encoding/json"
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
	compare := func(t *testing.T) {
		for i, data := range traces {
			slow, warnings, err := schema.DecodeReferenceGeneral("f.json", data)
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
			var streamed []schema.Event
			if !schema.EachReferenceEvent(data, func(e *schema.Event) { streamed = append(streamed, *e) }) {
				t.Fatalf("trace %d: EachReferenceEvent gives up on a clean trace", i)
			}
			if !reflect.DeepEqual(streamed, slow) {
				t.Fatalf("trace %d: EachReferenceEvent disagrees:\nstreamed %#v\nslow     %#v", i, streamed, slow)
			}
		}
	}
	t.Run("as read", compare)
	t.Run("reading ahead", func(t *testing.T) {
		restore, joins := schema.ReadAheadEverywhere()
		defer restore()
		before := joins()
		compare(t)
		if runtime.GOMAXPROCS(0) > 1 && joins() == before {
			t.Error("no trace's actions were read ahead: the test does not try what it is for")
		}
	})
}

// BenchmarkSummaryFoldAdd adds the generated 50k-action run to a summary:
// its events encoded (with github.com/segmentio/encoding, whose AVX2
// assembly leaves the upper register state dirty) and hashed. With the
// state not cleared before hashing (internal/avxstate), the hash took
// about 0.8 s per run on an Intel processor with AVX-512, instead of 8 ms.
func BenchmarkSummaryFoldAdd(b *testing.B) {
	evs, _, err := schema.DecodeReferenceWarn("50k.json", generatedReference(b, 50000))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		f, err := schema.NewSummaryFold([]schema.RuleManifestEntry{{ID: "r"}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Add(schema.TraceManifestEntry{ID: "t", RunID: evs[0].RunID}, evs, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashAfterEncode is the publisher's per-event work on a thread
// that has just run segmentio/encoding: an event encoded, then one event's
// JSON hashed, with the AVX state cleared before the hash ("cleared", what
// transport.Publisher does) and without ("dirty").
func BenchmarkHashAfterEncode(b *testing.B) {
	evs, _, err := schema.DecodeReferenceWarn("1k.json", generatedReference(b, 1000))
	if err != nil {
		b.Fatal(err)
	}
	line, err := schema.AppendEventLine(nil, &evs[len(evs)/2])
	if err != nil {
		b.Fatal(err)
	}
	for _, clear := range []bool{true, false} {
		name := map[bool]string{true: "cleared", false: "dirty"}[clear]
		b.Run(name, func(b *testing.B) {
			var out []byte
			i := 0
			for b.Loop() {
				out, _ = schema.AppendEventLine(out[:0], &evs[i%len(evs)])
				i++
				if clear {
					avxstate.Clear()
				}
				_ = sha256.Sum256(line)
			}
		})
	}
}

// BenchmarkAppendEventLine encodes the events of a generated run, one at a
// time, with AppendEventLine (which writes them member by member) and with
// segmentio/encoding alone (what AppendEventLine falls back to).
func BenchmarkAppendEventLine(b *testing.B) {
	evs, _, err := schema.DecodeReferenceWarn("1k.json", generatedReference(b, 1000))
	if err != nil {
		b.Fatal(err)
	}
	encoders := []struct {
		name string
		fn   func(dst []byte, ev *schema.Event) ([]byte, error)
	}{
		{"AppendEventLine", schema.AppendEventLine},
		{"segmentio", func(dst []byte, ev *schema.Event) ([]byte, error) {
			return segjson.Append(dst, ev, segjson.EscapeHTML|segjson.SortMapKeys)
		}},
	}
	for _, enc := range encoders {
		b.Run(enc.name, func(b *testing.B) {
			var out []byte
			i := 0
			for b.Loop() {
				if out, err = enc.fn(out[:0], &evs[i%len(evs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
		})
	}
}
