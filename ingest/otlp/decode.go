package otlp

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// The content types of OTLP/HTTP.
const (
	ContentJSON     = "application/json"
	ContentProtobuf = "application/x-protobuf"
)

// ErrContentType is returned for a body that is neither OTLP JSON nor
// protobuf.
var ErrContentType = errors.New("expected Content-Type application/json or application/x-protobuf")

// Decode reads an ExportTraceServiceRequest in the encoding contentType
// names. JSON goes through pdata's decoder, which reads trace and span ids
// as the hex strings OTLP/JSON uses.
func Decode(body []byte, contentType string) (ptrace.Traces, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ptrace.Traces{}, fmt.Errorf("%w, got %q", ErrContentType, contentType)
	}
	req := ptraceotlp.NewExportRequest()
	switch mt {
	case ContentJSON:
		if err := req.UnmarshalJSON(body); err != nil {
			return ptrace.Traces{}, fmt.Errorf("expected an OTLP/JSON ExportTraceServiceRequest: %v", err)
		}
	case ContentProtobuf:
		if err := req.UnmarshalProto(body); err != nil {
			return ptrace.Traces{}, fmt.Errorf("expected an OTLP protobuf ExportTraceServiceRequest: %v", err)
		}
	default:
		return ptrace.Traces{}, fmt.Errorf("%w, got %q", ErrContentType, mt)
	}
	return req.Traces(), nil
}

// DecodeFile reads an exported file: OTLP/JSON (one request, or one per
// line as the collector's file exporter writes) or, when it does not start
// with "{", protobuf. Gzip is undone first.
func DecodeFile(data []byte, name string) ([]ptrace.Traces, error) {
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: gzip: %v", name, err)
		}
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		td, err := Decode(data, ContentProtobuf)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		return []ptrace.Traces{td}, nil
	}
	var out []ptrace.Traces
	for i, line := range bytes.Split(trimmed, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		td, err := Decode(line, ContentJSON)
		if err != nil {
			if i == 0 {
				// One request spread over several lines.
				if whole, err2 := Decode(trimmed, ContentJSON); err2 == nil {
					return []ptrace.Traces{whole}, nil
				}
			}
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
		out = append(out, td)
	}
	return out, nil
}
