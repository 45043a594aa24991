package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/query/record"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

// recordFixture is the record query's fixture trace: decompositions,
// conformance checks, verifications, residuals, assumptions, a superseded
// decomposition, one symbol in two files, a file edited later in the run.
const recordFixture = "../../examples/record/payments.json"

// The runs storeRecordRuns stores: the fixture; the fixture declaring
// trace spec 2.0; the fixture with a decomposition whose complete is not
// a boolean.
const (
	recordRun  = "tr-payments"
	newerRun   = "tr-record-newer"
	warnedRun  = "tr-record-warned"
	recordRuns = "'tr-payments', 'tr-record-newer', 'tr-record-warned'"
)

// fixtureVariant is the fixture trace with each pair of replacements
// made once, written under t's temporary directory.
func fixtureVariant(t *testing.T, replace ...string) string {
	t.Helper()
	data, err := os.ReadFile(recordFixture)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("%s holds no %q", recordFixture, replace[i])
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	p := filepath.Join(t.TempDir(), "variant.json")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readRuns reads the runs of a trace file as `ponens trace` does.
func readRuns(t *testing.T, path string) []record.Run {
	t.Helper()
	f, err := tracefile.ReadFile(path, tracefile.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f.Release()
	var runs []record.Run
	for _, r := range f.Runs {
		runs = append(runs, record.Run{Run: r, Reference: f.Reference})
	}
	return runs
}

// recordPos is the stream position of the record runs' last event
// stored: each store of them takes new positions, so that the engine does
// not take the batches of a store after a removal for repeats.
var recordPos uint64 = 1 << 40

// storeRecordRuns stores the record runs into the test engine, each in
// three batches committed last first, so that the store holds a run's
// events in parts out of seq order; they leave the store when t ends
// (other tests count the runs). It returns the files stored, by run id.
func storeRecordRuns(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{
		recordRun: recordFixture,
		newerRun:  fixtureVariant(t, `"tr-payments"`, `"`+newerRun+`"`, `"spec_version": "1.13"`, `"spec_version": "2.0"`),
		warnedRun: fixtureVariant(t, `"tr-payments"`, `"`+warnedRun+`"`, `"complete": true`, `"complete": "yes"`),
	}
	t.Cleanup(func() {
		for _, table := range []string{"events", "verdicts", "run_rule_status", "runs"} {
			q := fmt.Sprintf("ALTER TABLE %s DELETE WHERE run_id IN (%s) SETTINGS mutations_sync = 1", table, recordRuns)
			if _, err := engine.Query([]byte(q), ""); err != nil {
				t.Errorf("removing the record runs from %s: %v", table, err)
			}
		}
	})
	for _, id := range []string{recordRun, newerRun, warnedRun} {
		events := readRuns(t, files[id])[0].Events
		third := len(events) / 3
		for _, part := range [][]schema.Event{events[2*third:], events[third : 2*third], events[:third]} {
			a := chdb.NewStore(engine).Appender()
			if err := sink.AppendRun(a, part, nil, &recordPos); err != nil {
				t.Fatal(err)
			}
			if err := a.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return files
}

// answerJSON is v as `ponens trace … --json` prints it, without the
// final newline.
func answerJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// The record routes over a stored run answer, byte for byte, the JSON
// that record.Extract and Index, Detail or RegionsOf give over the trace
// file the run was stored from: the index; known symbols (superseded,
// edited later in the run, in one of two files); region maps whole, cut
// by limit and narrowed by each form of where; unknown symbols.
func TestRecordOverTheStore(t *testing.T) {
	storeRecordRuns(t)
	rec, _, err := record.Extract(readRuns(t, recordFixture))
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t)
	base := ts.URL + "/v1/runs/" + recordRun + "/record/symbols"
	where := func(expr string) record.Where {
		w, err := record.ParseWhere(expr)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	regions := func(symbol, file string, w record.Where, limit int) any {
		a, err := rec.RegionsOf(symbol, file, w, limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	detail := func(symbol, file string) any {
		a, err := rec.Detail(symbol, file, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		path string
		want any
	}{
		{"", rec.Index(nil, nil)},
		{"/step", detail("step", "")},
		{"/refund", detail("refund", "")},
		{"/invoice_total", detail("invoice_total", "")},
		{"/validate?file=forms/b.py", detail("validate", "forms/b.py")},
		{"/validate?file=./forms/a.py", detail("validate", "./forms/a.py")},
		{"/step?regions=1", regions("step", "", record.Where{}, 20)},
		{"/step?regions=true&limit=2", regions("step", "", record.Where{}, 2)},
		{"/step?limit=0", regions("step", "", record.Where{}, 0)},
		{"/step?where=" + url.QueryEscape("a.c = Capture"), regions("step", "", where("a.c = Capture"), 20)},
		{"/step?where=outcome:Rejected", regions("step", "", where("outcome:Rejected"), 20)},
		{"/step?where=diverged", regions("step", "", where("diverged"), 20)},
		{"/step?where=raised&regions=0", regions("step", "", where("raised"), 20)},
		{"/invoice_total?where=diverged", regions("invoice_total", "", where("diverged"), 20)},
		{"/refund?regions=1", regions("refund", "", record.Where{}, 20)},
		{"/nosuch", detail("nosuch", "")},
		{"/nosuch?file=x.py", detail("nosuch", "x.py")},
		{"/nosuch?where=raised", regions("nosuch", "", where("raised"), 20)},
		{"/step?file=nosuch.py", detail("step", "nosuch.py")},
	} {
		code, body := get(t, base+c.path)
		want := `{"status":"success","data":` + answerJSON(t, c.want) + "}\n"
		if code != 200 || string(body) != want {
			t.Errorf("GET …/record/symbols%s: %d\n%s\nwant (record over the trace file)\n%s", c.path, code, body, want)
		}
	}
	checkRecordAnswers(t, rec)
}

// checkRecordAnswers checks that the answers compared are the ones the
// test means: a limit that cuts, where forms that narrow, an absence.
func checkRecordAnswers(t *testing.T, rec *record.Record) {
	all, _ := rec.RegionsOf("step", "", record.Where{}, 0, nil)
	cut, _ := rec.RegionsOf("step", "", record.Where{}, 2, nil)
	raised, _ := rec.RegionsOf("step", "", record.Where{Form: record.WhereRaised}, 0, nil)
	a, c, r := all.(record.Regions), cut.(record.Regions), raised.(record.Regions)
	if a.Total <= 2 || c.Returned != 2 || c.Total != a.Total || r.Total == 0 || r.Total >= a.Total {
		t.Fatalf("the fixture no longer exercises limit and where: %d regions, cut to %d of %d, %d raised", a.Total, c.Returned, c.Total, r.Total)
	}
	if _, err := rec.Detail("validate", "", nil); err == nil {
		t.Fatal("the fixture no longer records validate in two files")
	}
}

// errorAnswer GETs u and decodes its error envelope.
func errorAnswer(t *testing.T, u string) (int, ErrorType, string) {
	t.Helper()
	code, body := get(t, u)
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Status != "error" {
		t.Fatalf("GET %s: %d %s, want an error envelope", u, code, body)
	}
	return code, env.ErrorType, env.Error
}

// The record routes' refusals: an unknown run (404), a symbol in two
// files without file (400 naming the files), a run of a trace spec
// version the record query does not read (400 with the message of
// `ponens trace`), malformed parameters (400 naming them).
func TestRecordErrors(t *testing.T) {
	files := storeRecordRuns(t)
	ts := newTestServer(t)
	run := ts.URL + "/v1/runs/" + recordRun + "/record/symbols"
	versionErr := record.CheckVersion(readRuns(t, files[newerRun])[0].Run)
	var ve *record.VersionError
	if !errors.As(versionErr, &ve) {
		t.Fatalf("the 2.0 fixture: %v, want a version error", versionErr)
	}
	for _, c := range []struct {
		u    string
		code int
		want string
	}{
		{ts.URL + "/v1/runs/no-such-run/record/symbols", 404, `run "no-such-run": the store has no event of it`},
		{ts.URL + "/v1/runs/no-such-run/record/symbols/step", 404, `run "no-such-run": the store has no event of it`},
		{run + "/validate", 400, "parameter file: validate is recorded in 2 files (forms/a.py, forms/b.py): name one"},
		{ts.URL + "/v1/runs/" + newerRun + "/record/symbols", 400, `run "` + newerRun + `": ` + versionErr.Error()},
		{ts.URL + "/v1/runs/" + newerRun + "/record/symbols/step", 400, versionErr.Error()},
		{run + "/step?where=", 400, "parameter where: an empty expression"},
		{run + "/step?where=outcome:", 400, "parameter where: outcome: without a label"},
		{run + "/step?limit=-1", 400, "parameter limit: expected a whole number from 0"},
		{run + "/step?regions=maybe", 400, "parameter regions: expected 1, true, 0 or false"},
		{run + "/step?cwd=.", 400, `parameter "cwd": unknown parameter; this endpoint takes file, regions, where, limit`},
		{run + "?file=a.py", 400, `parameter "file": unknown parameter`},
	} {
		code, typ, msg := errorAnswer(t, c.u)
		if code != c.code || typ.Status() != code || !strings.Contains(msg, c.want) {
			t.Errorf("GET %s: %d %s %q, want %d with %q", c.u, code, typ, msg, c.code, c.want)
		}
	}
}

// What the record cannot read of a run's payloads comes as the
// envelope's warnings, the ones record.Extract reports over the file, and
// the entry stands with what could be read.
func TestRecordWarnings(t *testing.T) {
	files := storeRecordRuns(t)
	rec, problems, err := record.Extract(readRuns(t, files[warnedRun]))
	if err != nil || len(problems) == 0 {
		t.Fatalf("the warned fixture: %v %v, want problems", problems, err)
	}
	ts := newTestServer(t)
	code, body := get(t, ts.URL+"/v1/runs/"+warnedRun+"/record/symbols")
	warnings, _ := json.Marshal(problems)
	want := `{"status":"success","data":` + answerJSON(t, rec.Index(nil, nil)) + `,"warnings":` + string(warnings) + "}\n"
	if code != 200 || string(body) != want {
		t.Errorf("GET …/%s/record/symbols: %d\n%s\nwant\n%s", warnedRun, code, body, want)
	}
}

// Hostile values in every parameter and path value of the record routes
// are answered without 5xx, strings that are not NUL or invalid UTF-8
// as questions (200; as a symbol, "a/b" included, an absence), and the
// stored run is intact afterwards.
func TestRecordHostileParameters(t *testing.T) {
	storeRecordRuns(t)
	ts := newTestServer(t)
	count := func() string {
		out, err := engine.Query([]byte("SELECT count() FROM events FINAL WHERE run_id = '"+recordRun+"'"), "CSV")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := count()
	hostile := []string{"'", `\`, `\'`, `"`, "'; DROP TABLE events; --", "\x00", "\xff\xfe", "{p0:String}", "a/b", "..", strings.Repeat("x'\\", 3000)}
	run := ts.URL + "/v1/runs/" + recordRun + "/record/symbols"
	for _, h := range hostile {
		plain := !strings.ContainsRune(h, 0) && strings.ToValidUTF8(h, "") == h && len(h) <= maxParam
		for _, p := range recordSymbolParams {
			u := run + "/step?" + url.Values{p: {h}}.Encode()
			code, body := get(t, u)
			if code >= 500 || (plain && (p == "file" || p == "where") && code != 200) {
				t.Errorf("%s=%q: %d %s", p, h, code, body)
			}
		}
		for _, u := range []string{ts.URL + "/v1/runs/" + url.PathEscape(h) + "/record/symbols", ts.URL + "/v1/runs/" + url.PathEscape(h) + "/record/symbols/step"} {
			if code, body := get(t, u); code >= 500 {
				t.Errorf("%s: %d %s", u, code, body)
			}
		}
		u := run + "/" + url.PathEscape(h)
		code, body := get(t, u)
		absent := `{"status":"success","data":` + answerJSON(t, record.Absence{Symbol: h}) + "}\n"
		if code >= 500 || (plain && h != ".." && string(body) != absent) {
			t.Errorf("%s: %d %s, want %s", u, code, body, absent)
		}
	}
	if after := count(); after != before || before == "0" {
		t.Errorf("events of %s: %s before the hostile requests, %s after", recordRun, before, after)
	}
}
