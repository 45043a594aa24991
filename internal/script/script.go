// Package script reads the language's script-style golden tests: a run's
// events, rules with their expected results, expected values of formulas at
// each position, and expected verdict streams. The same scripts run against
// the reference evaluator (policy/eval) and the incremental monitor.
//
// A script is a text file of sections, each opened by a line "-- name --":
//
//	# comments anywhere outside events
//	-- events --
//	{"type":"run.start"}
//	{"type":"action","action":{"id":1,"type":"RunTests","status":"completed"}}
//	-- rules --
//	tests_before_commit: G(GitCommit → P(RunTests ∧ completed)) ==> pass
//	no_commit: G(¬GitCommit) ==> fail 2
//	-- at --
//	P(RunTests) ==> 0 1
//	-- verdicts no_commit --
//	3 violated ¬GitCommit
//
// Events may leave out v, runId, seq and ts: they are filled in (runId
// "run", seq counting from 1). A rules line is "id: formula ==> result", the
// result being pass, not_applicable, or fail followed by the witnessing
// action ids. An at line "formula ==> values" gives a formula's value (1 or
// 0) at each position.
// A verdicts section lists the expected transitions of one rule as
// "seq status [leaning] [| subformula]".
package script

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ponens/ponens/schema"
)

// Script is one parsed script file.
type Script struct {
	File     string
	Events   []schema.Event
	Rules    []Rule
	At       []At
	Verdicts map[string][]Verdict // by rule id
}

// Rule is a rules line.
type Rule struct {
	ID, Formula string
	Result      string // pass, fail, not_applicable
	Witnesses   []int64
	Line        int
}

// At is an at line: the formula's expected value at each position.
type At struct {
	Formula string
	Values  []bool
	Line    int
}

// Verdict is one expected verdict transition.
type Verdict struct {
	Seq        uint64
	Status     string
	Leaning    string
	Subformula string
	Line       int
}

// Load reads a script file.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &Script{File: path, Verdicts: map[string][]Verdict{}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			section = strings.TrimSpace(line[3 : len(line)-3])
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, args...))
		}
		switch {
		case section == "events":
			var ev schema.Event
			dec := json.NewDecoder(strings.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ev); err != nil {
				return nil, bad("event: %v", err)
			}
			s.Events = append(s.Events, ev)
		case section == "rules":
			id, rest, ok1 := strings.Cut(line, ":")
			formula, result, ok2 := strings.Cut(rest, "==>")
			if !ok1 || !ok2 {
				return nil, bad("want id: formula ==> result")
			}
			fields := strings.Fields(result)
			r := Rule{ID: strings.TrimSpace(id), Formula: strings.TrimSpace(formula), Line: n}
			if len(fields) == 0 {
				return nil, bad("missing result")
			}
			r.Result = fields[0]
			for _, w := range fields[1:] {
				id, err := strconv.ParseInt(w, 10, 64)
				if err != nil {
					return nil, bad("witness %q: %v", w, err)
				}
				r.Witnesses = append(r.Witnesses, id)
			}
			s.Rules = append(s.Rules, r)
		case section == "at":
			formula, values, ok := strings.Cut(line, "==>")
			if !ok {
				return nil, bad("want formula ==> values")
			}
			a := At{Formula: strings.TrimSpace(formula), Line: n}
			for _, v := range strings.Fields(values) {
				a.Values = append(a.Values, v == "1")
			}
			s.At = append(s.At, a)
		case strings.HasPrefix(section, "verdicts "):
			id := strings.TrimPrefix(section, "verdicts ")
			head, sub, _ := strings.Cut(line, "|")
			fields := strings.Fields(head)
			if len(fields) < 2 {
				return nil, bad("want seq status [leaning] [| subformula]")
			}
			seq, err := strconv.ParseUint(fields[0], 10, 64)
			if err != nil {
				return nil, bad("seq: %v", err)
			}
			v := Verdict{Seq: seq, Status: fields[1], Subformula: strings.TrimSpace(sub), Line: n}
			if len(fields) > 2 {
				v.Leaning = fields[2]
			}
			s.Verdicts[id] = append(s.Verdicts[id], v)
		default:
			return nil, bad("line outside a known section (%q)", section)
		}
	}
	fill(s.Events)
	return s, sc.Err()
}

// fill completes envelopes the script left short.
func fill(events []schema.Event) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range events {
		e := &events[i]
		if e.V == 0 {
			e.V = schema.EnvelopeVersion
		}
		if e.RunID == "" {
			e.RunID = "run"
		}
		if e.Seq == 0 {
			e.Seq = uint64(i + 1)
		}
		if e.TS.IsZero() {
			e.TS = t0.Add(time.Duration(i) * time.Second)
		}
	}
}
