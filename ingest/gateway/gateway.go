package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes    = 8 << 20
	DefaultDeadLetterBytes = 64 << 10
)

// inputName names the request body in error messages.
const inputName = "request"

// Options configures the gateway.
type Options struct {
	// MaxBodyBytes is the largest body accepted; larger ones get 413
	// (DefaultMaxBodyBytes when 0).
	MaxBodyBytes int64
	// MaxEventBytes is the largest event, a line or an array element
	// (schema.DefaultMaxLine when 0).
	MaxEventBytes int
	// Token, when set, is the bearer token POST requires.
	Token string
	// DeadLetterBytes is how much of an oversize body its dead letter keeps
	// (DefaultDeadLetterBytes when 0).
	DeadLetterBytes int
	// Health, when set, is asked by /healthz; an error makes it 503.
	Health func() error
	// DeadLetterRate is the rate, in bytes per second, at which one client
	// (one remote host) may fill the dead-letter stream with refused
	// input; over it the refused events are listed in a 429 answer but not
	// stored. 0 means no limit. A client may send up to twice
	// MaxBodyBytes at once.
	DeadLetterRate float64
	// Streams, when set, answers GET /v1/streams: how full the streams
	// are (transport.Usage); an error makes it 503.
	Streams func(ctx context.Context) (any, error)
	// Metrics, when set, counts the events and is served at GET /metrics
	// (with the bearer token when one is configured).
	Metrics *Metrics
	// Logger receives failures to store; nil discards them.
	Logger *slog.Logger
}

// Sink stores events: it returns once each is stored or has failed, with
// one outcome per event (Err nil when stored, Duplicate when stored
// before). *transport.Publisher is one.
type Sink interface {
	PublishBatchOutcomes(ctx context.Context, events []*schema.Event) []transport.Outcome
}

// DeadLetterSink stores a refused input with its reason (schema.Reason…),
// its source and the error. *transport.DeadLetters is one.
type DeadLetterSink interface {
	Send(ctx context.Context, reason, source string, err error, payload []byte) error
}

// Response is the JSON body of every answer to POST /v1/events.
type Response struct {
	// Accepted counts the events stored: now (Stored) or before
	// (Duplicates: the same run, seq and content was stored already, and
	// nothing was stored again).
	Accepted   int `json:"accepted"`
	Stored     int `json:"stored"`
	Duplicates int `json:"duplicates"`
	// Rejected counts the events refused, Conflicts of them because other
	// content is stored under their run and seq.
	Rejected  int       `json:"rejected"`
	Conflicts int       `json:"conflicts"`
	Errors    []Problem `json:"errors"`
	// Events says what became of each event of the body, in order; absent
	// when the body as a whole was refused.
	Events []EventResult `json:"events,omitempty"`
	// Error says why the request as a whole failed (401, 413, 415, 503).
	Error string `json:"error,omitempty"`
}

// EventResult is what became of one event of the body.
type EventResult struct {
	Line  int `json:"line"`  // 1-based line in the body where it starts
	Index int `json:"index"` // its 0-based position among the body's events
	// Status is stored, duplicate (stored before), conflict (other content
	// is stored under its run and seq; dead-lettered), rejected (see
	// errors; dead-lettered) or failed (not stored: see error).
	Status string `json:"status"`
}

// Problem is why one event of the body was rejected.
type Problem struct {
	Line   int    `json:"line"`   // 1-based line in the body; 0 for the whole body
	Column int    `json:"column"` // 1-based byte column; 0 when unknown
	Index  int    `json:"index"`  // the event's 0-based position among the body's events
	Field  string `json:"field"`  // JSON path in the event; "" for the whole event
	Reason string `json:"reason"` // the dead-letter reason
	Error  string `json:"error"`  // what is wrong and what was expected
}

// New returns the gateway's handler: it publishes valid events to pub and
// dead-letters the rest to dlq.
func New(opts Options, pub Sink, dlq DeadLetterSink) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = schema.DefaultMaxLine
	}
	if opts.DeadLetterBytes <= 0 {
		opts.DeadLetterBytes = DefaultDeadLetterBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &gateway{opts: opts, pub: pub, dlq: dlq, limits: newClientLimits(opts.DeadLetterRate, int(min(2*opts.MaxBodyBytes, 1<<31-1)))}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/events", g.events)
	mux.HandleFunc("GET /healthz", g.health)
	mux.HandleFunc("GET /v1/streams", g.streams)
	if opts.Metrics != nil {
		metrics := opts.Metrics.handler()
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			if !g.authorized(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="ponens"`)
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required (Authorization: Bearer <token>)"})
				return
			}
			metrics.ServeHTTP(w, r)
		})
	}
	return mux
}

// streams answers GET /v1/streams.
func (g *gateway) streams(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ponens"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required (Authorization: Bearer <token>)"})
		return
	}
	if g.opts.Streams == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "stream usage is not available here"})
		return
	}
	v, err := g.opts.Streams(r.Context())
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"streams": v})
}

type gateway struct {
	opts   Options
	pub    Sink
	dlq    DeadLetterSink
	limits *clientLimits // nil: no dead-letter rate
}

// health answers GET /healthz.
func (g *gateway) health(w http.ResponseWriter, _ *http.Request) {
	if g.opts.Health != nil {
		if err := g.opts.Health(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// events answers POST /v1/events.
func (g *gateway) events(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ponens"`)
		writeJSON(w, http.StatusUnauthorized, Response{Errors: []Problem{}, Error: "a bearer token is required (Authorization: Bearer <token>)"})
		return
	}
	lines, err := isJSONLines(r.Header.Get("Content-Type"))
	if err != nil {
		writeJSON(w, http.StatusUnsupportedMediaType, Response{Errors: []Problem{}, Error: err.Error()})
		return
	}
	dlq := g.limits.deadLetters(r, g.dlq)
	data, size, tooLarge, err := g.readBody(w, r)
	switch {
	case tooLarge:
		g.tooLarge(w, r, dlq, data, size)
		return
	case err != nil: // the client went away or sent a broken body
		writeJSON(w, http.StatusBadRequest, Response{Errors: []Problem{}, Error: "reading the body: " + err.Error()})
		return
	}
	items, bad := split(data, lines, g.opts.MaxEventBytes)
	if bad != nil {
		g.notJSON(w, r, dlq, data, bad)
		return
	}
	res, status := g.process(r.Context(), dlq, items)
	writeJSON(w, status, res)
}

// authorized checks the bearer token, if one is configured.
func (g *gateway) authorized(r *http.Request) bool {
	if g.opts.Token == "" {
		return true
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(g.opts.Token)) == 1
}

// isJSONLines tells the body's form from its Content-Type.
func isJSONLines(contentType string) (bool, error) {
	if contentType == "" {
		return false, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false, fmt.Errorf("Content-Type %q: %v", contentType, err)
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return false, nil
	case mt == "application/x-ndjson" || mt == "application/jsonl" || mt == "application/x-jsonlines" ||
		mt == "application/jsonlines":
		return true, nil
	}
	return false, fmt.Errorf("Content-Type %q: send application/json (an event or an array of events) or application/x-ndjson (JSON lines)", mt)
}

// readBody reads the body up to the limit. Over it, it reports tooLarge
// and returns what it read (at most DeadLetterBytes) and the size (-1 when
// unknown).
func (g *gateway) readBody(w http.ResponseWriter, r *http.Request) (data []byte, size int64, tooLarge bool, err error) {
	limit := g.opts.MaxBodyBytes
	if r.ContentLength > limit {
		head, _ := io.ReadAll(io.LimitReader(r.Body, int64(g.opts.DeadLetterBytes)))
		return head, r.ContentLength, true, nil
	}
	data, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return data[:min(len(data), g.opts.DeadLetterBytes)], -1, true, nil
	}
	return data, int64(len(data)), false, err
}

// tooLarge answers 413 and dead-letters the head of the body.
func (g *gateway) tooLarge(w http.ResponseWriter, r *http.Request, dlq DeadLetterSink, head []byte, size int64) {
	got := "more than " + strconv.FormatInt(g.opts.MaxBodyBytes, 10) + " bytes"
	if size >= 0 {
		got = strconv.FormatInt(size, 10) + " bytes"
	}
	got += fmt.Sprintf("; the dead letter keeps its first %d bytes", len(head))
	fe := &schema.FieldError{Err: schema.ErrTooLarge, Expected: fmt.Sprintf("a request body of at most %d bytes", g.opts.MaxBodyBytes), Got: got}
	p := Problem{Reason: schema.ReasonTooLarge, Error: fe.Error()}
	res := Response{Rejected: 1, Errors: []Problem{p}, Error: "request body too large"}
	status := http.StatusRequestEntityTooLarge
	if err := dlq.Send(r.Context(), schema.ReasonTooLarge, schema.SourceGateway, fe, head); err != nil {
		status, res.Error = g.unavailable("dead-letter", err)
	}
	w.Header().Set("Connection", "close")
	writeJSON(w, status, res)
}

// notJSON answers 400 and dead-letters the body as malformed.
func (g *gateway) notJSON(w http.ResponseWriter, r *http.Request, dlq DeadLetterSink, data []byte, fe *schema.FieldError) {
	p := Problem{Line: 1, Column: 1, Reason: schema.ReasonMalformed, Error: fe.Error()}
	res := Response{Rejected: 1, Errors: []Problem{p}, Error: "the body is not JSON"}
	status := http.StatusBadRequest
	if len(bytes.TrimSpace(data)) > 0 {
		err := &schema.DecodeError{File: inputName, Line: 1, Col: 1, Msg: fe.Error(), Err: fe}
		if err := dlq.Send(r.Context(), schema.ReasonMalformed, schema.SourceGateway, err, data); err != nil {
			status, res.Error = g.unavailable("dead-letter", err)
		}
	}
	writeJSON(w, status, res)
}

// unavailable logs a failure to store and returns the 503 answer, or 429
// for a client over its dead-letter rate.
func (g *gateway) unavailable(what string, err error) (int, string) {
	if errors.Is(err, ErrDeadLetterRate) {
		g.opts.Logger.Warn("gateway: dead letters not stored: client over its rate", "what", what)
		return http.StatusTooManyRequests, err.Error() + "; the refused inputs are listed here but not stored"
	}
	g.opts.Logger.Warn("gateway: storing failed", "what", what, "err", err)
	return http.StatusServiceUnavailable, fmt.Sprintf("storing %s failed: %v; sending the request again is safe", what, err)
}

// process decodes the items, publishes the valid events, dead-letters the
// rest, and returns the response with its status.
func (g *gateway) process(ctx context.Context, dlq DeadLetterSink, items []item) (Response, int) {
	res := Response{Errors: []Problem{}}
	var events []*schema.Event
	var published []*item
	var refused []*item
	for i := range items {
		it := &items[i]
		if it.err == nil {
			ev, err := schema.DecodeEvent(inputName, it.raw)
			if err == nil {
				events = append(events, &ev)
				published = append(published, it)
				continue
			}
			it.err = it.relocate(err)
		}
		refused = append(refused, it)
	}

	var failure string
	status := 0
	for i, o := range g.pub.PublishBatchOutcomes(ctx, events) {
		it := published[i]
		switch err := o.Err; {
		case err == nil:
			res.Accepted++
			if o.Duplicate {
				res.Duplicates++
				it.status = "duplicate"
			} else {
				res.Stored++
				it.status = "stored"
			}
		case errors.Is(err, schema.ErrTooLarge) || errors.As(err, new(*schema.FieldError)):
			it.err = it.relocate(err)
			refused = append(refused, it)
		default:
			it.status = "failed"
			if failure == "" {
				status, failure = g.unavailable("events", err)
			}
		}
	}
	for _, it := range refused {
		res.Rejected++
		it.status = "rejected"
		if errors.Is(it.err, schema.ErrConflictingDuplicate) {
			res.Conflicts++
			it.status = "conflict"
		}
		res.Errors = append(res.Errors, it.problems()...)
		if err := dlq.Send(ctx, schema.DeadLetterReason(it.err), schema.SourceGateway, it.err, it.raw); err != nil && failure == "" {
			status, failure = g.unavailable("dead-letters", err)
		}
	}
	for i := range items {
		res.Events = append(res.Events, EventResult{Line: items[i].line, Index: items[i].index, Status: items[i].status})
	}
	g.opts.Metrics.countEvents(res.Events)
	sortProblems(res.Errors)
	res.Error = failure
	switch {
	case status != 0:
	case res.Rejected == 0:
		status = http.StatusOK
	case res.Accepted > 0:
		status = http.StatusMultiStatus
	default:
		status = http.StatusUnprocessableEntity
	}
	return res, status
}

// writeJSON writes v as the JSON body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
