package schema

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxRunIDLen is the longest runId, in bytes, that an event may carry.
const MaxRunIDLen = 256

// eventTypes lists every event type, in the order they are documented.
var eventTypes = []EventType{
	TypeRunStart, TypeRunFinish, TypeRunError, TypeRunCancel,
	TypeAction, TypeArtifact, TypeResidual, TypeTelemetry,
}

// typeList is eventTypes for messages: "run.start, run.finish, …".
var typeList = func() string {
	names := make([]string, len(eventTypes))
	for i, t := range eventTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}()

// The statuses of an action. An empty status means unknown.
const (
	ActionCompleted = "completed"
	ActionFailed    = "failed"
)

// Validate checks the envelope of e: the version, a runId of 1 to
// MaxRunIDLen bytes, seq >= 1, a timestamp, a known type, the body that goes
// with the type and no other (run.start and the terminal types may omit
// theirs), a non-empty action type, a known action status, evidence types,
// and artifact ids and types. The error is a *FieldError naming the first
// problem; it says nothing about ordering, which needs the rest of the run.
func (e *Event) Validate() error {
	switch {
	case e.V != EnvelopeVersion:
		return &FieldError{Field: "v", Err: ErrUnsupportedVersion, Expected: strconv.Itoa(EnvelopeVersion), Got: strconv.Itoa(e.V)}
	case e.RunID == "":
		return &FieldError{Field: "runId", Err: ErrMissingField, Expected: "a non-empty string"}
	case len(e.RunID) > MaxRunIDLen:
		return &FieldError{Field: "runId", Err: ErrTooLarge, Expected: fmt.Sprintf("at most %d bytes", MaxRunIDLen), Got: fmt.Sprintf("%d bytes", len(e.RunID))}
	case e.Seq < 1:
		return &FieldError{Field: "seq", Err: ErrInvalidValue, Expected: "an integer >= 1", Got: "0"}
	case e.TS.IsZero():
		return &FieldError{Field: "ts", Err: ErrMissingField, Expected: "an RFC 3339 timestamp"}
	case !slices.Contains(eventTypes, e.Type):
		return &FieldError{Field: "type", Err: ErrUnknownType, Expected: "one of " + typeList, Got: strconv.Quote(string(e.Type))}
	}
	if err := e.validateBodies(); err != nil {
		return err
	}
	switch {
	case e.Action != nil:
		return e.Action.validate("action")
	case e.Artifact != nil:
		return e.Artifact.validate("artifact")
	case e.Residual != nil:
		if err := e.Residual.validate("residual"); err != nil {
			return err
		}
		if e.Residual.Type != "Residual" {
			return &FieldError{Field: "residual.artifact_type", Err: ErrInvalidValue, Expected: `"Residual"`, Got: strconv.Quote(e.Residual.Type)}
		}
	}
	return nil
}

// bodyField names the body field that goes with t.
func bodyField(t EventType) string {
	switch t {
	case TypeRunStart:
		return "start"
	case TypeRunFinish, TypeRunError, TypeRunCancel:
		return "end"
	}
	return string(t)
}

// validateBodies checks that e has the body its type needs and no other.
func (e *Event) validateBodies() error {
	want := bodyField(e.Type)
	present := []struct {
		name string
		set  bool
	}{
		{"start", e.Start != nil},
		{"end", e.End != nil},
		{"action", e.Action != nil},
		{"artifact", e.Artifact != nil},
		{"residual", e.Residual != nil},
		{"telemetry", e.Telemetry != nil},
	}
	for _, b := range present {
		switch {
		case b.set && b.name != want:
			return &FieldError{Field: b.name, Err: ErrUnexpectedField, Expected: fmt.Sprintf("only the %s body for type %q", want, e.Type)}
		case !b.set && b.name == want && want != "start" && want != "end":
			return &FieldError{Field: want, Err: ErrMissingField, Expected: fmt.Sprintf("a body for type %q", e.Type)}
		}
	}
	return nil
}

// validate checks an action whose path is at.
func (a *Action) validate(at string) error {
	if a.Type == "" {
		return &FieldError{Field: at + ".type", Err: ErrMissingField, Expected: "a non-empty string"}
	}
	if a.Status != "" && a.Status != ActionCompleted && a.Status != ActionFailed {
		return &FieldError{Field: at + ".status", Err: ErrInvalidValue, Expected: `"", "completed" or "failed"`, Got: strconv.Quote(a.Status)}
	}
	for i, ev := range a.Evidence {
		if ev.Type == "" {
			return &FieldError{Field: fmt.Sprintf("%s.evidence[%d].type", at, i), Err: ErrMissingField, Expected: "a non-empty string"}
		}
	}
	for i := range a.Artifacts {
		if err := a.Artifacts[i].validate(fmt.Sprintf("%s.artifacts[%d]", at, i)); err != nil {
			return err
		}
	}
	return nil
}

// validate checks an artifact whose path is at.
func (a *Artifact) validate(at string) error {
	if a.ID == "" {
		return &FieldError{Field: at + ".artifact_id", Err: ErrMissingField, Expected: "a non-empty string"}
	}
	if a.Type == "" {
		return &FieldError{Field: at + ".artifact_type", Err: ErrMissingField, Expected: "a non-empty string"}
	}
	return nil
}
