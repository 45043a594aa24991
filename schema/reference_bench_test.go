package schema_test

import (
	"bytes"
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
