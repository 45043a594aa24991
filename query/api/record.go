package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/ponens/ponens/query/record"
	"github.com/ponens/ponens/schema"
)

// recordSymbolParams are the query parameters of the one-symbol route.
var recordSymbolParams = []string{"file", "regions", "where", "limit"}

// defaultRegionLimit is how many regions a regions answer gives unless
// limit says otherwise, as `ponens trace symbol --regions` does.
const defaultRegionLimit = 20

// RecordAnswer is what a record route answers: the record query's answer
// (a record.Index, record.Detail, record.Regions or record.Absence), the
// data of the envelope, and what the record could not read of the run's
// payloads, the envelope's warnings.
type RecordAnswer struct {
	Answer   any
	Warnings []string
}

// RecordOptions is the question of the one-symbol route, as `ponens trace
// symbol` asks it: Symbol in File ("" when the record has it in one file
// only); with Regions, the region map narrowed by Where, at most Limit
// regions (0: all).
type RecordOptions struct {
	Symbol  string
	File    string
	Regions bool
	Where   record.Where
	Limit   int
}

// warnedEnvelope is the success envelope of a record route: warnings, as
// Prometheus's HTTP API names them, beside the data.
type warnedEnvelope struct {
	Status   string   `json:"status"`
	Data     any      `json:"data"`
	Warnings []string `json:"warnings,omitempty"`
}

// recordRoutes registers the record query's routes.
func (s *Server) recordRoutes() {
	s.handleRecord("/v1/runs/{run}/record/symbols", nil, func(r *http.Request, _ *query) (*RecordAnswer, error) {
		return s.RecordIndex(r.Context(), r.PathValue("run"))
	})
	s.handleRecord("/v1/runs/{run}/record/symbols/{symbol}", recordSymbolParams, func(r *http.Request, q *query) (*RecordAnswer, error) {
		if err := pathValues(r, "symbol"); err != nil {
			return nil, err
		}
		o, err := recordOptions(q, r.PathValue("symbol"))
		if err != nil {
			return nil, err
		}
		return s.RecordSymbol(r.Context(), r.PathValue("run"), o)
	})
}

// handleRecord registers a GET route answering a RecordAnswer in a
// success envelope with its warnings.
func (s *Server) handleRecord(pattern string, known []string, fn func(r *http.Request, q *query) (*RecordAnswer, error)) {
	s.get(pattern, known, func(w http.ResponseWriter, r *http.Request) {
		q, err := newQuery(r.URL.Query(), s.opts.Now(), known...)
		if err == nil {
			err = pathValues(r, "run")
		}
		var a *RecordAnswer
		if err == nil {
			a, err = fn(r, q)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, warnedEnvelope{Status: "success", Data: a.Answer, Warnings: a.Warnings})
	})
}

// recordOptions reads the parameters of the one-symbol route: where and
// limit imply regions, as --where and --limit do.
func recordOptions(q *query, symbol string) (RecordOptions, error) {
	o := RecordOptions{Symbol: symbol, File: q.str("file")}
	var err error
	if o.Regions, err = q.boolParam("regions"); err != nil {
		return o, err
	}
	if q.v.Has("where") {
		if o.Where, err = record.ParseWhere(q.str("where")); err != nil {
			return o, badData("where", "%v, got %s", err, safe(q.str("where")))
		}
		o.Regions = true
	}
	if o.Limit, err = q.intParam("limit", defaultRegionLimit, 0, math.MaxInt32); err != nil {
		return o, err
	}
	o.Regions = o.Regions || q.v.Has("limit")
	return o, nil
}

// RecordIndex answers `ponens trace symbols` over the stored run: one row
// per (symbol, file) its record knows anything about. The service has no
// checkout, so freshness rests on the trace alone, and no requirements
// file, so every requirement is null.
func (s *Server) RecordIndex(ctx context.Context, run string) (*RecordAnswer, error) {
	rec, warnings, err := s.runRecord(ctx, run)
	if err != nil {
		return nil, err
	}
	return &RecordAnswer{Answer: rec.Index(nil, nil), Warnings: warnings}, nil
}

// RecordSymbol answers `ponens trace symbol` over the stored run, its
// freshness from the trace alone. A symbol the record does not know is an
// answer (record.Absence); one it knows in several files, without a File
// naming one, is bad_data naming the files.
func (s *Server) RecordSymbol(ctx context.Context, run string, o RecordOptions) (*RecordAnswer, error) {
	rec, warnings, err := s.runRecord(ctx, run)
	if err != nil {
		return nil, err
	}
	var answer any
	if o.Regions {
		answer, err = rec.RegionsOf(o.Symbol, o.File, o.Where, o.Limit, nil)
	} else {
		answer, err = rec.Detail(o.Symbol, o.File, nil)
	}
	var amb *record.AmbiguousError
	if errors.As(err, &amb) {
		return nil, badData("file", "%v", amb)
	}
	if err != nil {
		return nil, err
	}
	return &RecordAnswer{Answer: answer, Warnings: warnings}, nil
}

// runRecord is the record of the stored run: its events read back in seq
// order, as an event stream (the store keeps no trace file, so an
// entry's time falls back to its event's stored ts, as it does for a
// JSONL trace). not_found when the store has no event of it; bad_data
// when its trace spec version is one the record query does not read.
func (s *Server) runRecord(ctx context.Context, run string) (*record.Record, []string, error) {
	events, err := s.runEvents(ctx, run)
	if err != nil {
		return nil, nil, err
	}
	if len(events) == 0 {
		return nil, nil, notFound("run %s: the store has no event of it", safe(run))
	}
	r := schema.Run{ID: run, Events: events}
	if err := record.CheckVersion(r); err != nil {
		return nil, nil, &Error{Type: ErrBadData, Msg: fmt.Sprintf("run %s: %v", safe(run), err)}
	}
	rec, problems, err := record.Extract([]record.Run{{Run: r}})
	if err != nil {
		return nil, nil, err
	}
	return rec, problems, nil
}
