package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/internal/gen"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/schema"
)

// BenchmarkCheckReference is `ponens check --rules R` with one rule on the
// generated 50k-action reference trace of docs/performance.md (the run
// tracegen -reference writes), verdict stream and summary.json written.
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
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		checked, done, err := streamChecks([]string{p}, config.TraceConfig{}, []*monitor.Engine{eng}, io.Discard, newProgress(io.Discard, 1, progressMin, "", ""))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := writeCheck(eng.Rules(), checked, b.TempDir(), filepath.Join(b.TempDir(), "v")); err != nil {
			b.Fatal(err)
		}
		done()
	}
}
