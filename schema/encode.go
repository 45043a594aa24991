package schema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// AppendEventLine appends EncodeEventLine(ev) to dst: the same bytes,
// written member by member (eventWriter) when every string and raw member
// is one encoding/json writes as it is, else encoded by
// segmentio/encoding without reflection per call, three times faster
// than encoding/json. ev must be an event a decoder of this package gave
// (DecodeEvent, ScanJSONL, DecodeReference, …), whose raw JSON members
// each hold exactly one JSON value: encoding/json refuses a raw member
// with data after its value, the other two drop or keep it. A timestamp
// encoding/json refuses (a year past 9999 or before 0), or an error, is
// left to EncodeEventLine, which gives encoding/json's error.
// FuzzEncodeFast checks the encoders agree on every decoded event.
func AppendEventLine(dst []byte, ev *Event) ([]byte, error) {
	if out, ok := appendEventWritten(dst, ev); ok {
		return out, nil
	}
	if y := ev.TS.Year(); y >= 0 && y <= 9999 {
		out, err := segjson.Append(dst, ev, segjson.EscapeHTML|segjson.SortMapKeys)
		if err == nil {
			return append(out, '\n'), nil
		}
	}
	line, err := EncodeEventLine(ev)
	return append(dst, line...), err
}

// AppendVerdictLine appends json.Marshal(v) and a newline to dst (the
// line a verdict stream holds), writing the verdict's members directly.
// json.Marshal escapes <, > and & in what MarshalJSON gives, so the cause's
// event is written as AppendEventLine writes it: causeLine is that line of
// v.Cause.Event, or nil to have json.Marshal encode a verdict with a
// cause. A verdict with a string that needs escaping is encoded by
// json.Marshal too. FuzzEncodeVerdict checks the result against
// json.Marshal.
func AppendVerdictLine(dst []byte, v *VerdictEvent, causeLine []byte) ([]byte, error) {
	var event []byte
	if v.Cause != nil {
		if event = bytes.TrimSuffix(causeLine, []byte("\n")); len(event) == 0 {
			return appendMarshaled(dst, v)
		}
	}
	start := len(dst)
	dst = append(dst, `{"formatVersion":`...)
	dst = strconv.AppendInt(dst, FormatVersion, 10)
	ok := true
	str := func(key, s string) {
		dst = append(dst, key...)
		dst, ok = appendPlainString(dst, s, ok)
	}
	str(`,"runId":`, v.RunID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, v.Seq, 10)
	str(`,"rule":{"id":`, v.Rule.ID)
	str(`,"description":`, v.Rule.Description)
	str(`},"status":`, string(v.Status))
	if v.Leaning != "" {
		str(`,"leaning":`, string(v.Leaning))
	}
	if v.Cause != nil {
		dst = append(dst, `,"cause":{"event":`...)
		dst = append(dst, event...)
		str(`,"subformula":`, v.Cause.Subformula)
		dst = append(dst, '}')
	}
	str(`,"mode":`, string(v.Mode))
	if !ok {
		return appendMarshaled(dst[:start], v)
	}
	return append(dst, "}\n"...), nil
}

// appendMarshaled appends v's MarshalJSON and a newline.
func appendMarshaled(dst []byte, v *VerdictEvent) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(append(dst, b...), '\n'), nil
}

// appendPlainString appends s as a JSON string when encoding/json writes
// it as it is, quoted: no quote, backslash, control character or <, >, &,
// only valid UTF-8, no line or paragraph separator. Otherwise it returns
// ok false (and dst, of no use then).
func appendPlainString(dst []byte, s string, ok bool) ([]byte, bool) {
	if !ok {
		return dst, false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return dst, false
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
			return dst, false
		}
		i += n
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}

// plainASCII holds the ASCII bytes encoding/json writes in a string as
// they are.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
