package stored_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ponens/ponens/query/record"
	"github.com/ponens/ponens/query/record/stored"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
)

var engine *chdb.Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ponens-stored-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	engine, err = chdb.Open(chdb.Options{Path: dir})
	if err == nil {
		_, err = chdb.Migrate(engine)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stored tests:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	engine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is the example record trace's events, as run id.
func fixture(t *testing.T, id string) []schema.Event {
	t.Helper()
	data, err := os.ReadFile("../../../examples/record/payments.json")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := schema.Decode("payments.json", data, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		evs[i].RunID = id
	}
	return evs
}

// storeRuns commits the runs' events, each run's in reverse seq order in
// its own commit, so that reading them back must order them.
func storeRuns(t *testing.T, runs ...[]schema.Event) {
	t.Helper()
	st := chdb.NewStore(engine)
	pos := uint64(time.Now().UnixNano() / 1000)
	for _, evs := range runs {
		for i := len(evs) - 1; i >= 0; i-- {
			a := st.Appender()
			if err := sink.AppendRun(a, evs[i:i+1], nil, &pos); err != nil {
				t.Fatal(err)
			}
			if err := a.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type row struct {
	Symbol      string `json:"symbol"`
	File        string `json:"file"`
	RunID       string `json:"run_id"`
	Ref         string `json:"ref"`
	Kind        string `json:"kind"`
	Grade       string `json:"grade"`
	Established string `json:"established_at"`
	SourceHash  string `json:"source_hash"`
	Regions     uint32 `json:"regions"`
	Gaps        uint32 `json:"gaps"`
	Superseded  bool   `json:"superseded"`
}

func storedRows(t *testing.T, like string) map[string]row {
	t.Helper()
	out, err := engine.Query([]byte("SELECT * EXCEPT stored_at FROM record_entries FINAL WHERE run_id LIKE '"+like+"' ORDER BY run_id, symbol, file, ref"), "JSONEachRow")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]row{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		rows[r.RunID+"/"+r.Symbol+"/"+r.Ref] = r
	}
	return rows
}

// The rows of two runs of the same trace both stand (their refs are
// alike), one per entry of the run's record, with its fields; written
// again, they replace themselves.
func TestWriterRows(t *testing.T) {
	a, b := fixture(t, "st-a"), fixture(t, "st-b")
	storeRuns(t, a, b)
	w := &stored.Writer{Store: chdb.Querier{E: engine}, Insert: chdb.NewStore(engine)}
	for range 2 {
		if err := w.Ended(context.Background(), []string{"st-a", "st-b"}); err != nil {
			t.Fatal(err)
		}
	}
	rows := storedRows(t, "st-%")
	rec, _, err := record.Extract([]record.Run{{Run: schema.Run{ID: "st-a", Events: a}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Entries) < 5 || len(rows) != 2*len(rec.Entries) {
		t.Fatalf("%d rows for two runs of %d entries:\n%v", len(rows), len(rec.Entries), rows)
	}
	// What the example trace establishes, as its README describes it.
	for key, want := range map[string]row{
		"st-a/refund/fr59": {Kind: "verification", Grade: "proved", File: "refunds.py", SourceHash: "refunds.py@0d1e2f3a", Superseded: true},
		"st-a/refund/fr60": {Kind: "verification", Grade: "proved", File: "refunds.py", SourceHash: "refunds.py@0d1e2f3a"},
		"st-b/step/fr58":   {Kind: "decomposition", Grade: "tested", File: "payments.py", Regions: 6, Gaps: 1},
	} {
		got, ok := rows[key]
		if !ok || got.Kind != want.Kind || got.Grade != want.Grade || got.File != want.File || got.Superseded != want.Superseded ||
			got.Regions != want.Regions || (want.SourceHash != "" && got.SourceHash != want.SourceHash) || (want.Gaps != 0 && got.Gaps != want.Gaps) {
			t.Errorf("%s: %+v, want %+v", key, got, want)
		}
	}
	for _, e := range rec.Entries {
		got := rows["st-a/"+e.Symbol+"/"+e.Ref]
		if got.File != e.File || got.Kind != e.Kind || got.Grade != e.Grade || got.Superseded != e.Superseded || got.SourceHash != e.Source.String() {
			t.Errorf("entry %s/%s: stored %+v, extracted %+v", e.Symbol, e.Ref, got, e)
		}
		if !e.Established.IsZero() && got.Established != e.Established.UTC().Format("2006-01-02 15:04:05.000") {
			t.Errorf("entry %s/%s: established %s, extracted %s", e.Symbol, e.Ref, got.Established, e.Established)
		}
	}
}

// A run whose trace the record query cannot read (another spec version)
// has no rows, and the writer says why.
func TestWriterRefusedVersion(t *testing.T) {
	evs := fixture(t, "st-v9")
	for i := range evs {
		if evs[i].Type == schema.TypeRunStart {
			if evs[i].Start.Extra == nil {
				evs[i].Start.Extra = map[string]json.RawMessage{}
			}
			evs[i].Start.Extra["spec_version"] = json.RawMessage(`"9.0"`)
		}
	}
	storeRuns(t, evs)
	var told []string
	w := &stored.Writer{Store: chdb.Querier{E: engine}, Insert: chdb.NewStore(engine), Problems: func(run string, p []string) { told = append(told, run+": "+strings.Join(p, "; ")) }}
	if err := w.Ended(context.Background(), []string{"st-v9"}); err != nil {
		t.Fatal(err)
	}
	if rows := storedRows(t, "st-v9"); len(rows) != 0 {
		t.Errorf("%d rows of a run the record cannot read", len(rows))
	}
	if len(told) != 1 || !strings.Contains(told[0], "st-v9: ") || !strings.Contains(told[0], "9.0") {
		t.Errorf("problems told: %q", told)
	}
}
