package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzReferenceFast checks that decoding a reference trace with
// segmentio/encoding (the fast pass of DecodeReferenceWarn) gives, when it
// finds no problem and no warning, exactly what encoding/json's decoding
// gives, which then finds none either. The seeds are the reference traces
// of the tests and examples.
func FuzzReferenceFast(f *testing.F) {
	for _, glob := range []string{"testdata/reference/*.json", "../examples/traces/*.json", "../ingest/tracefile/testdata/*.json"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(`{"actions": [{"id": 1, "type": "ReadFile", "inputs": "a", "status": 3}], "outcome": {"type": "ProcessCompleted"}}`))
	f.Add([]byte(`{"actions": [{"id": "1", "type": "RunTests", "evidence": [{"type": "FileRef", "ref": "x\u00e9\ud800"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast := refDecoder{data: data, fast: true}
		got := fast.decode()
		if len(fast.problems) > 0 || len(fast.warnings) > 0 {
			return // decoded again with encoding/json: that is the answer
		}
		slow := refDecoder{data: data}
		want := slow.decode()
		if len(slow.problems) > 0 || len(slow.warnings) > 0 {
			t.Fatalf("the fast pass accepts what encoding/json's does not: %d problems, %d warnings", len(slow.problems), len(slow.warnings))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the passes differ:\nfast %+v\nslow %+v", got, want)
		}
	})
}
