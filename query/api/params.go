package api

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ponens/ponens/schema"
)

// maxParam is the longest a parameter value may be, and maxValues how many
// values a repeatable parameter may have: bounds on what one request makes
// the store read.
const (
	maxParam  = 4096
	maxValues = 1000
)

// Selection picks runs and rules: the parameters most endpoints share.
// Empty fields select everything.
type Selection struct {
	Runs    []string // run ids, in the order given
	Agent   string
	Project string
	Rules   []string // rule ids, in the order given
	Since   time.Time
	Until   time.Time
	Status  schema.VerdictStatus // the run's worst status over the rules
}

// repeatable are the parameters that may be given more than once, each
// value adding to the selection (status only on the verdict streams); any
// other is refused when repeated, as which value would count is a guess.
var repeatable = map[string]bool{"run": true, "rule": true, "status": true}

// query reads one request's parameters and refuses any it does not know:
// a misspelt filter is an error, not a silently wider answer.
type query struct {
	v     url.Values
	known map[string]bool
	now   time.Time
}

func newQuery(v url.Values, now time.Time, known ...string) (*query, error) {
	q := &query{v: v, known: map[string]bool{}, now: now}
	for _, k := range known {
		q.known[k] = true
	}
	for k, vals := range v {
		if !q.known[k] {
			if len(known) == 0 {
				return nil, badData(safe(k), "unknown parameter; this endpoint takes none")
			}
			return nil, badData(safe(k), "unknown parameter; this endpoint takes %s", strings.Join(known, ", "))
		}
		if len(vals) > maxValues {
			return nil, badData(k, "at most %d values, got %d", maxValues, len(vals))
		}
		if len(vals) > 1 && !repeatable[k] {
			return nil, badData(k, "given %d times; it takes one value", len(vals))
		}
		for _, s := range vals {
			if len(s) > maxParam {
				return nil, badData(k, "at most %d bytes, got %d", maxParam, len(s))
			}
			if !utf8.ValidString(s) {
				return nil, badData(k, "not valid UTF-8")
			}
			if strings.IndexByte(s, 0) >= 0 {
				return nil, badData(k, "holds a NUL byte")
			}
		}
	}
	return q, nil
}

// safe is a parameter name fit to quote in an error message.
func safe(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

func (q *query) str(name string) string { return q.v.Get(name) }

func (q *query) list(name string) []string {
	var out []string
	for _, s := range q.v[name] {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// time reads an RFC 3339 time or a duration back from now (1h: an hour
// ago); zero when absent.
func (q *query) time(name string) (time.Time, error) {
	s := q.v.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := parseDuration(s); err == nil && d >= 0 {
		return q.now.Add(-d).UTC(), nil
	}
	return time.Time{}, badData(name, "expected an RFC 3339 time (2026-12-01T10:00:00Z) or a duration back from now (90m, 24h, 7d), got %s", safe(s))
}

// parseDuration is time.ParseDuration with days (7d).
func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.ParseUint(n, 10, 16)
		return time.Duration(d) * 24 * time.Hour, err
	}
	return time.ParseDuration(s)
}

// step reads a bucket width (default def), at least a second and at most
// 31 days.
func (q *query) step(def time.Duration) (time.Duration, error) {
	s := q.v.Get("step")
	if s == "" {
		return def, nil
	}
	d, err := parseDuration(s)
	if err != nil || d < time.Second || d > 31*24*time.Hour || d%time.Second != 0 {
		return 0, badData("step", "expected a whole number of seconds between 1s and 31d (15m, 1h, 1d), got %s", safe(s))
	}
	return d, nil
}

// intParam reads a count between lo and hi, def when absent.
func (q *query) intParam(name string, def, lo, hi int) (int, error) {
	s := q.v.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, badData(name, "expected a whole number from %d to %d, got %s", lo, hi, safe(s))
	}
	return n, nil
}

// boolParam reads 1/true/0/false; false when absent.
func (q *query) boolParam(name string) (bool, error) {
	switch s := q.v.Get(name); s {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, badData(name, "expected 1, true, 0 or false, got %s", safe(s))
	}
}

// selectionParams are the parameters of a Selection.
var selectionParams = []string{"run", "agent", "project", "rule", "since", "until", "status"}

// selection reads the selection parameters.
func (q *query) selection() (Selection, error) {
	var s Selection
	var err error
	s.Runs, s.Rules = q.list("run"), q.list("rule")
	s.Agent, s.Project = q.str("agent"), q.str("project")
	if s.Since, err = q.time("since"); err != nil {
		return s, err
	}
	if s.Until, err = q.time("until"); err != nil {
		return s, err
	}
	if !s.Since.IsZero() && !s.Until.IsZero() && s.Until.Before(s.Since) {
		return s, badData("until", "is before since")
	}
	if n := len(q.v["status"]); n > 1 {
		return s, badData("status", "given %d times; a selection takes one status, the run's worst over the rules", n)
	}
	if st := q.str("status"); st != "" {
		if !slices.Contains(schema.Statuses, schema.VerdictStatus(st)) {
			return s, badData("status", "expected satisfied, violated, pending or unresolved, got %s", safe(st))
		}
		s.Status = schema.VerdictStatus(st)
	}
	return s, nil
}

// cursor is the position after the last run of a page: runs are listed
// newest first, by start time then run id.
type cursor struct {
	StartedMS int64  `json:"s"`
	RunID     string `json:"r"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.RunID == "" {
		return nil, badData("cursor", "not a cursor this service gave (pass nextCursor as it came)")
	}
	return &c, nil
}
