package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ponens/ponens/query/alert"
)

// Alerts is what the admin routes manage: the alert subscriptions and
// silences of the alert stage (alert.Store over the alerts bucket is
// one). Put checks what it stores, with the alert stage's validation.
type Alerts interface {
	// Subscriptions lists the subscriptions without their secrets, each
	// with its delivery state.
	Subscriptions(ctx context.Context) ([]alert.SubscriptionState, error)
	PutSubscription(ctx context.Context, s alert.Subscription) error
	// DeleteSubscription fails with alert.ErrNotFound when there is none.
	DeleteSubscription(ctx context.Context, id string) error
	Silences(ctx context.Context) ([]alert.Silence, error)
	PutSilence(ctx context.Context, s alert.Silence) error
	// DeleteSilence fails with alert.ErrNotFound when there is none.
	DeleteSilence(ctx context.Context, id string) error
}

// maxBody is the largest request body an admin route reads.
const maxBody = 64 << 10

// adminRoutes registers the subscription and silence routes: reads with
// any token, writes with an admin one.
func (s *Server) adminRoutes() {
	a := s.opts.Alerts
	s.read("/v1/subscriptions", func(ctx context.Context) (any, error) {
		subs, err := a.Subscriptions(ctx)
		return map[string]any{"subscriptions": nonNil(subs)}, err
	})
	s.read("/v1/silences", func(ctx context.Context) (any, error) {
		sil, err := a.Silences(ctx)
		return map[string]any{"silences": nonNil(sil)}, err
	})
	s.write(http.MethodPut, "/v1/subscriptions/{id}", func(r *http.Request, id string) (any, error) {
		var sub alert.Subscription
		if err := decodeBody(r, id, &sub, &sub.ID); err != nil {
			return nil, err
		}
		if err := a.PutSubscription(r.Context(), sub); err != nil {
			return nil, alertsError(err)
		}
		secret := sub.Secret != ""
		sub.Secret = ""
		return map[string]any{"subscription": alert.SubscriptionState{Subscription: sub, SecretSet: secret}}, nil
	})
	s.write(http.MethodPut, "/v1/silences/{id}", func(r *http.Request, id string) (any, error) {
		sil, err := s.silenceOf(r, id)
		if err != nil {
			return nil, err
		}
		if err := a.PutSilence(r.Context(), sil); err != nil {
			return nil, alertsError(err)
		}
		return map[string]any{"silence": sil}, nil
	})
	s.write(http.MethodDelete, "/v1/subscriptions/{id}", func(r *http.Request, id string) (any, error) {
		return map[string]any{"deleted": id}, alertsError(a.DeleteSubscription(r.Context(), id))
	})
	s.write(http.MethodDelete, "/v1/silences/{id}", func(r *http.Request, id string) (any, error) {
		return map[string]any{"deleted": id}, alertsError(a.DeleteSilence(r.Context(), id))
	})
}

// read registers a GET route without parameters whose answer is fn's,
// enveloped; a failure of fn is the alerts bucket's.
func (s *Server) read(pattern string, fn func(context.Context) (any, error)) {
	s.handle(pattern, nil, func(r *http.Request, _ *query) (any, error) {
		data, err := fn(r.Context())
		if err != nil {
			return nil, alertsError(err)
		}
		return data, nil
	})
}

// write registers an admin route on {id} without query parameters whose
// answer is fn's, enveloped.
func (s *Server) write(method, pattern string, fn func(r *http.Request, id string) (any, error)) {
	s.route(method, pattern, nil, func(w http.ResponseWriter, r *http.Request) {
		if err := s.requireAdmin(r); err != nil {
			writeError(w, err)
			return
		}
		if _, err := newQuery(r.URL.Query(), s.opts.Now()); err != nil {
			writeError(w, err)
			return
		}
		if err := pathValues(r, "id"); err != nil {
			writeError(w, err)
			return
		}
		data, err := fn(r, r.PathValue("id"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeData(w, data)
	})
}

// silenceBody is a silence as a PUT gives it: its end, or for how long it
// lasts from now.
type silenceBody struct {
	alert.Silence
	For alert.Duration `json:"for,omitempty"`
}

// silenceOf reads the silence id of r's body; it must end (ends, or for
// from now) in the future.
func (s *Server) silenceOf(r *http.Request, id string) (alert.Silence, error) {
	var b silenceBody
	if err := decodeBody(r, id, &b, &b.ID); err != nil {
		return alert.Silence{}, err
	}
	now := s.opts.Now()
	switch {
	case b.For < 0:
		return alert.Silence{}, &Error{Type: ErrBadData, Msg: "silence " + id + ": field for: must be positive, got " + safe(time.Duration(b.For).String())}
	case b.For > 0 && !b.Ends.IsZero():
		return alert.Silence{}, &Error{Type: ErrBadData, Msg: "silence " + id + ": fields ends, for: give one of them"}
	case b.For > 0:
		b.Ends = now.Add(time.Duration(b.For)).UTC()
	}
	if err := b.Silence.Validate(); err != nil {
		return alert.Silence{}, &Error{Type: ErrBadData, Msg: err.Error()}
	}
	if !b.Ends.After(now) {
		return alert.Silence{}, &Error{Type: ErrBadData, Msg: "silence " + id + ": field ends: must be in the future, got " + b.Ends.UTC().Format("2006-01-02T15:04:05Z07:00")}
	}
	return b.Silence, nil
}

// decodeBody decodes r's JSON body into v, refusing unknown fields; the
// body's id (*bodyID) must be absent or the path's, and is set to it.
func decodeBody(r *http.Request, id string, v any, bodyID *string) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Type: ErrBadData, Msg: "body: want a JSON object of the fields in /openapi.json: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	if dec.More() {
		return &Error{Type: ErrBadData, Msg: "body: one JSON object, got more after it"}
	}
	if *bodyID != "" && *bodyID != id {
		return &Error{Type: ErrBadData, Msg: "body: field id: " + safe(*bodyID) + " is not the path's " + safe(id)}
	}
	*bodyID = id
	return nil
}

// alertsError is the answer of a failure of the alerts bucket: not_found
// for what is not stored, unavailable otherwise.
func alertsError(err error) error {
	var ae *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	case errors.As(err, new(*alert.InvalidError)):
		return &Error{Type: ErrBadData, Msg: err.Error()}
	case errors.Is(err, alert.ErrNotFound):
		return notFound("%s", err.Error())
	}
	return &Error{Type: ErrUnavailable, Msg: "the alerts bucket did not answer", Err: err}
}

// nonNil is xs, or an empty slice for nil (so that JSON says []).
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
