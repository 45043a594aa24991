package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ErrorType is the kind of an error answer, which fixes its status code.
type ErrorType string

// The error kinds of the API, as Prometheus's HTTP API names them.
const (
	ErrBadData      ErrorType = "bad_data"     // 400: a parameter is malformed
	ErrUnauthorized ErrorType = "unauthorized" // 401: no token, or an unknown one
	ErrForbidden    ErrorType = "forbidden"    // 403: the token's scope does not reach the route
	ErrNotFound     ErrorType = "not_found"    // 404: no such run, rule or route
	ErrUnavailable  ErrorType = "unavailable"  // 503: the store or NATS does not answer
	ErrTimeout      ErrorType = "timeout"      // 504: the query took too long
	ErrInternal     ErrorType = "internal"     // 500: a fault of the service
)

// Status is the HTTP status code of the kind.
func (t ErrorType) Status() int {
	switch t {
	case ErrBadData:
		return http.StatusBadRequest
	case ErrUnauthorized:
		return http.StatusUnauthorized
	case ErrForbidden:
		return http.StatusForbidden
	case ErrNotFound:
		return http.StatusNotFound
	case ErrUnavailable:
		return http.StatusServiceUnavailable
	case ErrTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Error is an answer that failed: its kind and a message that names the
// parameter and what was expected.
type Error struct {
	Type ErrorType
	Msg  string
	Err  error // the cause, logged, never sent for internal errors
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// badData is a bad_data error naming parameter name.
func badData(name, format string, args ...any) *Error {
	return &Error{Type: ErrBadData, Msg: "parameter " + name + ": " + fmt.Sprintf(format, args...)}
}

// notFound is a not_found error.
func notFound(format string, args ...any) *Error {
	return &Error{Type: ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}

// storeError is the error of a failed store query: unavailable (the
// store did not answer or refused), timeout when the context ended.
func storeError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	switch {
	case errors.Is(err, errDeadline):
		return &Error{Type: ErrTimeout, Msg: "the store query took too long", Err: err}
	}
	return &Error{Type: ErrUnavailable, Msg: "the store did not answer", Err: err}
}

// envelope is the JSON of every enveloped answer.
type envelope struct {
	Status    string    `json:"status"`
	Data      any       `json:"data,omitempty"`
	ErrorType ErrorType `json:"errorType,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// writeJSON writes v as JSON with status code, <, > and & as they are.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"status":"error","errorType":"internal","error":"encoding the answer failed"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// writeData writes a success envelope around data.
func writeData(w http.ResponseWriter, data any) {
	writeJSON(w, http.StatusOK, envelope{Status: "success", Data: data})
}

// writeError writes the error envelope of err; an error that is not an
// *Error is internal, and its text is not sent.
func writeError(w http.ResponseWriter, err error) {
	var ae *Error
	if !errors.As(err, &ae) {
		ae = &Error{Type: ErrInternal, Msg: "internal error", Err: err}
	}
	msg := ae.Msg
	if ae.Type == ErrInternal {
		msg = "internal error"
	}
	writeJSON(w, ae.Type.Status(), envelope{Status: "error", ErrorType: ae.Type, Error: msg})
}
