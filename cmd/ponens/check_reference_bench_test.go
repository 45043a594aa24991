package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/schema"
)

// BenchmarkCheckReference is `ponens check --rules R` with one rule on the
// generated 50k-action reference trace of docs/performance.md (the run
// tracegen -reference writes), verdict stream and summary.json written:
// the trace decoded whole, and checked as its events are decoded (what
// traces from streamReferenceMin bytes get).
func BenchmarkCheckReference(b *testing.B) {
	var stream bytes.Buffer
	if err := gen.WriteStream(&stream, 1, 50000); err != nil {
		b.Fatal(err)
	}
	evs, err := schema.DecodeJSONL("stream", &stream, 0)
	if err != nil {
		b.Fatal(err)
	}
	data, err := schema.EncodeReference(evs)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "50k.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	rf := ruleFlags{rules: []string{"testdata/check/rules.yaml"}}
	eng, err := loadEngine(&rf, config.RulesConfig{}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer func(min int64) { streamReferenceMin = min }(streamReferenceMin)
	for _, read := range []struct {
		name string
		min  int64
	}{{"whole", math.MaxInt64}, {"as-it-goes", 0}} {
		b.Run("read="+read.name, func(b *testing.B) {
			streamReferenceMin = read.min
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				checkFile(b, p, eng)
			}
		})
	}
}
