package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The seed corpora under testdata/fuzz are the fixtures of this package and
// a few broken variants of them.

// checkDecodeErrors fails unless err is nil or a well-formed DecodeErrors.
func checkDecodeErrors(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var errs DecodeErrors
	if !errors.As(err, &errs) || len(errs) == 0 || len(errs) > maxErrors+1 {
		t.Fatalf("error %T %v is not a DecodeErrors of 1 to %d problems", err, err, maxErrors+1)
	}
	for _, e := range errs {
		if e.Line < 1 || e.Err == nil {
			t.Fatalf("problem %#v has no line or no cause", e)
		}
	}
}

// FuzzDecodeJSONL checks that DecodeJSONL never panics, that what it
// accepts is valid, and that a clean stream re-encodes to itself.
func FuzzDecodeJSONL(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		events, err := DecodeJSONL("f.jsonl", bytes.NewReader(data), 4096)
		checkDecodeErrors(t, err)
		for _, e := range events {
			if err := e.Validate(); err != nil {
				t.Fatalf("accepted an invalid event: %v", err)
			}
		}
		if err != nil {
			return
		}
		encoded := encodeJSONL(t, events)
		again, err := DecodeJSONL("f.jsonl", bytes.NewReader(encoded), 0)
		if err != nil {
			t.Fatalf("re-encoded stream does not decode: %v\n%s", err, encoded)
		}
		if got := encodeJSONL(t, again); !bytes.Equal(got, encoded) {
			t.Fatalf("re-encoding is not stable:\n%s\nthen\n%s", encoded, got)
		}
	})
}

// FuzzDecodeReference checks that DecodeReference never panics, that what
// it accepts is one valid, gap-free run (its warnings located like errors),
// and that EncodeReference inverts it.
func FuzzDecodeReference(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		events, warnings, err := DecodeReferenceWarn("f.json", data)
		checkDecodeErrors(t, err)
		if err != nil {
			return
		}
		if warnings != nil {
			checkDecodeErrors(t, warnings)
		}
		for i, e := range events {
			if err := e.Validate(); err != nil || e.Seq != uint64(i+1) || e.RunID != events[0].RunID {
				t.Fatalf("event %d (seq %d, run %q) is not in order or invalid: %v", i, e.Seq, e.RunID, err)
			}
		}
		encoded, err := EncodeReference(events)
		if err != nil {
			t.Fatalf("EncodeReference: %v", err)
		}
		again, err := DecodeReference("encoded.json", encoded)
		if err != nil {
			t.Fatalf("encoded trace does not decode: %v\n%s", err, encoded)
		}
		if a, b := encodeJSONL(t, events), encodeJSONL(t, again); !bytes.Equal(a, b) {
			t.Fatalf("decode(encode(events)) differs:\n%s\nwant\n%s", b, a)
		}
	})
}

// FuzzDecodeSummary checks that DecodeSummary never panics and that what
// it accepts re-encodes to a summary that decodes to the same value.
func FuzzDecodeSummary(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSummary(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			return
		}
		encoded, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeSummary(encoded)
		if err != nil {
			t.Fatalf("re-encoded summary does not decode: %v\n%s", err, encoded)
		}
		if got, _ := json.Marshal(again); !bytes.Equal(got, encoded) {
			t.Fatalf("re-encoding is not stable:\n%s\nthen\n%s", encoded, got)
		}
	})
}

// FuzzDecodeFast checks the fast event decoder against encoding/json: what
// the fast one accepts, encoding/json accepts too, with the same event.
func FuzzDecodeFast(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, _, ok := decodeFast(data)
		if !ok {
			return
		}
		var slow Event
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&slow); err != nil {
			t.Fatalf("the fast decoder accepts what encoding/json refuses (%v): %q", err, data)
		}
		if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
			t.Fatalf("the fast decoder accepts trailing data %q", rest)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoders disagree on %q:\nfast %#v\nslow %#v", data, fast, slow)
		}
	})
}

// TestFastEventMirrorsEvent: fastEvent has Event's fields, in order, with
// the same names, tags and types, but for the timestamp's type.
func TestFastEventMirrorsEvent(t *testing.T) {
	a, b := reflect.TypeFor[Event](), reflect.TypeFor[fastEvent]()
	if a.NumField() != b.NumField() {
		t.Fatalf("Event has %d fields, fastEvent %d", a.NumField(), b.NumField())
	}
	for i := range a.NumField() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || fa.Tag != fb.Tag || (fa.Type != fb.Type && fa.Name != "TS") {
			t.Errorf("field %d: Event has %s %s %q, fastEvent %s %s %q", i, fa.Name, fa.Type, fa.Tag, fb.Name, fb.Type, fb.Tag)
		}
	}
}

// TestDecodeDeepNesting: an event nested deeper than encoding/json allows
// is refused as malformed by both decoders, not accepted by the fast one
// (it could not be encoded again as the cause of a verdict).
func TestDecodeDeepNesting(t *testing.T) {
	for _, d := range []int{maxDepth - 10, maxDepth + 1, 3 * maxDepth} {
		tel := strings.Repeat("[", d) + strings.Repeat("]", d)
		data := []byte(`{"v":1,"runId":"r","seq":1,"ts":"2026-01-01T00:00:00Z","type":"telemetry","telemetry":` + tel + `}`)
		_, _, fast := decodeFast(data)
		ev, err := DecodeEvent("e", data)
		switch {
		case d < maxDepth && (!fast || err != nil):
			t.Errorf("depth %d: refused (fast %v, %v)", d, fast, err)
		case d > maxDepth && (fast || !errors.Is(err, ErrMalformedJSON)):
			t.Errorf("depth %d: fast decoder accepts %v, DecodeEvent error %v", d, fast, err)
		case err == nil:
			if _, err := json.Marshal(ev); err != nil {
				t.Errorf("depth %d: accepted but does not encode: %v", d, err)
			}
		}
	}
	if deep, _ := scanShape([]byte(`{"s":"` + strings.Repeat("[", 2*maxDepth) + `\"[["}`)); deep {
		t.Error("brackets inside a string counted")
	}
}

// FuzzDecodeEventFast: whatever eventFast accepts, encoding/json decodes
// into the same Event with no error and nothing after it, and when it
// says no key can repeat, duplicateKey finds none.
func FuzzDecodeEventFast(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, maybeDup, ok := decodeEventFast(data, nil)
		if !ok {
			return
		}
		strs := map[string]string{}
		for range 2 { // the second time from the shared strings
			if shared, _, ok := decodeEventFast(data, strs); !ok || !reflect.DeepEqual(shared, fast) {
				t.Fatalf("sharing strings changes the event of %q:\nshared %#v\nalone %#v", data, shared, fast)
			}
		}
		var slow Event
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&slow); err != nil {
			t.Fatalf("eventFast accepts what encoding/json refuses (%v): %q", err, data)
		}
		if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
			t.Fatalf("eventFast accepts trailing data %q", rest)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoders disagree on %q:\nfast %#v\nslow %#v", data, fast, slow)
		}
		if _, _, _, dup := duplicateKey(data); dup && !maybeDup {
			t.Fatalf("eventFast misses a repeated key in %q", data)
		}
	})
}
