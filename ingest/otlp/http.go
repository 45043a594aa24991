package otlp

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/ponens/ponens/schema"
)

// DefaultMaxBodyBytes bounds a request body (after gzip is undone).
const DefaultMaxBodyBytes = 20 << 20

// Sink stores events, returning one error per event (nil when stored).
// *transport.Publisher is one.
type Sink interface {
	PublishBatch(ctx context.Context, events []*schema.Event) []error
}

// HandlerOptions configures the OTLP/HTTP receiver.
type HandlerOptions struct {
	// MaxBodyBytes is the largest body, compressed or not; larger gets 413
	// (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// Logger receives failures to store; nil discards them.
	Logger *slog.Logger
}

// Handler is the OTLP/HTTP traces receiver: POST /v1/traces with an
// ExportTraceServiceRequest in JSON or protobuf, gzip or not. It converts
// the spans with conv and stores the events in sink. It answers as
// OTLP/HTTP asks: 200 with an ExportTraceServiceResponse in the request's
// encoding, whose partial_success counts the spans it rejected and says
// why; 400 for a body it cannot decode, 413 over the size limit, 415 for
// another content type, 503 when events could not be stored.
func Handler(conv *Converter, sink Sink, opts HandlerOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		serveTraces(w, r, conv, sink, opts)
	})
	return mux
}

func serveTraces(w http.ResponseWriter, r *http.Request, conv *Converter, sink Sink, opts HandlerOptions) {
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt != ContentJSON && mt != ContentProtobuf {
		http.Error(w, fmt.Sprintf("%v, got %q", ErrContentType, ct), http.StatusUnsupportedMediaType)
		return
	}
	body, status, err := readBody(r, opts.MaxBodyBytes)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	td, err := Decode(body, mt)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res := conv.Convert(td, nil)
	events := make([]*schema.Event, len(res.Events))
	for i := range res.Events {
		events[i] = &res.Events[i]
	}
	stored := 0
	var firstErr error
	for _, err := range sink.PublishBatch(r.Context(), events) {
		if err == nil {
			stored++
		} else if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		opts.Logger.Warn("otlp: events not stored", "stored", stored, "of", len(events), "error", firstErr)
		http.Error(w, fmt.Sprintf("%d of %d events stored: %v", stored, len(events), firstErr), http.StatusServiceUnavailable)
		return
	}
	resp := ptraceotlp.NewExportResponse()
	if n := len(res.Rejected); n > 0 {
		ps := resp.PartialSuccess()
		ps.SetRejectedSpans(int64(n))
		ps.SetErrorMessage(rejectionMessage(res.Rejected))
	}
	var out []byte
	if mt == ContentJSON {
		out, err = resp.MarshalJSON()
	} else {
		out, err = resp.MarshalProto()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", mt)
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// readBody reads the body, undoing gzip, refusing more than max bytes
// before or after decompression.
func readBody(r *http.Request, max int64) ([]byte, int, error) {
	if r.ContentLength > max {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes: the limit is %d", r.ContentLength, max)
	}
	var in io.Reader = http.MaxBytesReader(nil, r.Body, max)
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(in)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip: %v", err)
		}
		in = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q: expected gzip or none", enc)
	}
	data, err := io.ReadAll(io.LimitReader(in, max+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), int64(len(data)) > max:
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over the limit of %d bytes", max)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %v", err)
	}
	return data, 0, nil
}

// maxListed is how many rejected spans a partial success names.
const maxListed = 10

// rejectionMessage names the first maxListed rejected spans (their names
// cut to 100 bytes) and counts the others.
func rejectionMessage(rs []Rejection) string {
	msgs := make([]string, 0, min(len(rs), maxListed)+1)
	for _, rj := range rs[:min(len(rs), maxListed)] {
		if len(rj.Name) > 100 {
			rj.Name = strings.ToValidUTF8(rj.Name[:100], "") + "…"
		}
		msgs = append(msgs, rj.String())
	}
	if more := len(rs) - maxListed; more > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(msgs, "; ")
}
