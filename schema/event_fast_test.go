package schema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fastLine is an action event with every kind of member eventFast reads.
const fastLine = `{"v":1,"runId":"r","seq":2,"ts":"2026-01-01T00:00:01Z","type":"action","action":{"id":1,"type":"EditFile","category":"activity","status":"completed","inputs":["a"],"outputs":[],` +
	`"evidence":[{"type":"FileRef","ref":"x"}],"payload":{"path":"p","n":[1,2]},"artifacts":[{"artifact_id":"a1","artifact_type":"SourceCode","producer_action_id":1,"derived_from":[],"payload":"caf\u00e9"}],"request":"r","requester":"q"}}`

// TestDecodeEventFastGivesUp: eventFast takes clean lines and gives up on
// each thing only the general decoders read (FuzzDecodeEventFast checks
// that what it takes is what encoding/json gives).
func TestDecodeEventFastGivesUp(t *testing.T) {
	takes := []string{
		fastLine,
		` ` + fastLine + " \r",
		`{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{"agent":"a","trace_id":"t","trigger":{"type":"UserRequest"},"high_stakes_paths":["src/"],"extra":{"project":"p"}}}`,
		`{"v":1,"runId":"r","seq":3,"ts":"2026-01-01T00:00:02Z","type":"run.finish","end":{"outcome":"success","message":"d\"one","implied":true}}`,
		`{"v":1,"runId":"r","seq":3,"ts":"2026-01-01T00:00:02Z","type":"residual","residual":{"artifact_id":"g","artifact_type":"Gap","supersedes":["a"],"ref":"r","created_at":"c","name":"n"}}`,
	}
	for _, l := range takes {
		if _, _, ok := decodeEventFast([]byte(l), nil); !ok {
			t.Errorf("gives up on %s", l)
		}
	}
	givesUp := map[string]string{
		"a key in another case":  strings.Replace(fastLine, `"category"`, `"Category"`, 1),
		"an unknown key":         strings.Replace(fastLine, `"category"`, `"categ"`, 1),
		"a key with an escape":   strings.Replace(fastLine, `"category"`, `"c\u0061tegory"`, 1),
		"a null":                 strings.Replace(fastLine, `"activity"`, `null`, 1),
		"a repeated member":      strings.Replace(fastLine, `"id":1,`, `"id":1,"id":2,`, 1),
		"a number for a string":  strings.Replace(fastLine, `"activity"`, `7`, 1),
		"a fraction for an int":  strings.Replace(fastLine, `"seq":2`, `"seq":2.0`, 1),
		"a negative seq":         strings.Replace(fastLine, `"seq":2`, `"seq":-2`, 1),
		"a string for an int":    strings.Replace(fastLine, `"v":1`, `"v":"1"`, 1),
		"a bad time":             strings.Replace(fastLine, `2026-01-01T00:00:01Z`, `2026-01-01 00:00:01`, 1),
		"trailing data":          fastLine + ` {}`,
		"malformed JSON":         strings.TrimSuffix(fastLine, `}`),
		"a raw null":             strings.Replace(fastLine, `"request":"r"`, `"request":null`, 1),
		"the requester twice":    strings.Replace(fastLine, `"request":"r"`, `"requester":"r"`, 1),
		"an object for an array": strings.Replace(fastLine, `"inputs":["a"]`, `"inputs":{}`, 1),
	}
	for what, l := range givesUp {
		if _, _, ok := decodeEventFast([]byte(l), nil); ok {
			t.Errorf("takes %s: %s", what, l)
		}
	}
}

// BenchmarkDecodeEvent decodes one action event (fastLine) with each of
// the decoders decodeEvent tries in turn.
func BenchmarkDecodeEvent(b *testing.B) {
	line := []byte(fastLine)
	b.Run("eventFast", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := decodeEventFast(line, nil); !ok {
				b.Fatal("gave up")
			}
		}
	})
	b.Run("segmentio", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := decodeFast(line); !ok {
				b.Fatal("gave up")
			}
		}
	})
}

// TestDecodeEventLongExtraRepeat: in an extra map longer than eventFast
// compares, a key repeated in another case is still refused.
func TestDecodeEventLongExtraRepeat(t *testing.T) {
	var keys []string
	for i := range 3 * maxExtraCompared {
		keys = append(keys, fmt.Sprintf(`"k%d": %d`, i, i))
	}
	keys = append(keys, `"K1": 0`)
	line := `{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{"extra":{` + strings.Join(keys, ", ") + `}}}`
	if _, maybeDup, ok := decodeEventFast([]byte(line), nil); !ok || !maybeDup {
		t.Fatalf("eventFast: ok %v, maybeDup %v; want the line taken and a possible repeat noted", ok, maybeDup)
	}
	if _, err := DecodeEvent("e", []byte(line)); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("DecodeEvent = %v, want a duplicate key", err)
	}
}
