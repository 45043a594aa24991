package schema

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileEventSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(EventJSONSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("event.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("event.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validLines returns every line of the valid event fixtures: the stream
// fixture and the golden conversions of the reference traces.
func validLines(t *testing.T) []string {
	t.Helper()
	paths, _ := filepath.Glob("testdata/reference/*.events.jsonl")
	paths = append(paths, "testdata/stream.jsonl")
	var lines []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, DefaultMaxLine)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) != "" {
				lines = append(lines, sc.Text())
			}
		}
	}
	if len(lines) < 40 {
		t.Fatalf("only %d fixture events", len(lines))
	}
	return lines
}

func TestSchemaAcceptsValidFixtures(t *testing.T) {
	sch := compileEventSchema(t)
	for _, line := range validLines(t) {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("schema rejects %s:\n%v", line, err)
		}
	}
}

// TestSchemaAgreesOnInvalid checks that the schema and the decoder (with
// Validate) reject the same invalid events.
func TestSchemaAgreesOnInvalid(t *testing.T) {
	sch := compileEventSchema(t)
	for _, tc := range invalidEvents {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if sch.Validate(inst) == nil {
				t.Errorf("schema accepts %s", tc.line)
			}
			if _, err := DecodeJSONL("t.jsonl", strings.NewReader(tc.line), 0); err == nil {
				t.Errorf("DecodeJSONL accepts %s", tc.line)
			}
		})
	}
}
