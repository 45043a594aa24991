package sink_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// storeUntil runs a sink into the embedded store until it committed rows
// messages and q answers want, or fails after 30 s.
func storeUntil(t *testing.T, js natsjs.JetStream, rows uint64, q, want string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stats := new(sink.Stats)
	go func() {
		done <- sink.FromStreams(ctx, js, subjects, chdb.NewStore(engine), sink.Options{BatchRows: 2, FlushEvery: 50 * time.Millisecond, RetryAfter: 50 * time.Millisecond, Stats: stats, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	}()
	got := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = query(t, q); got == want && stats.Rows.Load() >= rows {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("%s:\n%s\nwant\n%s", q, got, want)
	}
}

// The sink stores the DEADLETTER stream in dead_letters: reason, source,
// error, subject, body and the size of a cut input; consumed again from
// the start, it stores each once.
func TestSinkDeadLetters(t *testing.T) {
	js := startStreams(t)
	ctx := context.Background()
	// No merge may collapse a repeated insert: only the token drops it.
	if _, err := engine.Query([]byte("SYSTEM STOP MERGES dead_letters"), ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Query([]byte("SYSTEM START MERGES dead_letters"), "") })
	dl := transport.NewDeadLetters(js, subjects)
	marker := fmt.Sprintf("dl-test-%d", time.Now().UnixNano())
	if err := dl.Send(ctx, schema.ReasonMalformed, schema.SourceGateway, errors.New(marker+": line 1: expected a JSON object"), []byte("{oops")); err != nil {
		t.Fatal(err)
	}
	if err := dl.Send(ctx, schema.ReasonSeqGap, schema.SourceWorker, errors.New(marker+": seq 3 after 1"), []byte(`{"runId":"r","seq":3}`)); err != nil {
		t.Fatal(err)
	}
	cut := nats.NewMsg(subjects.DeadLetter(schema.ReasonTooLarge))
	cut.Header.Set(schema.HeaderReason, schema.ReasonTooLarge)
	cut.Header.Set(schema.HeaderSource, schema.SourcePublish)
	cut.Header.Set(schema.HeaderError, marker+": over the limit")
	cut.Header.Set(schema.HeaderTruncated, "2000000")
	cut.Data = []byte(`{"runId":"big"`)
	if _, err := js.PublishMsg(ctx, cut); err != nil {
		t.Fatal(err)
	}
	q := "SELECT reason, source, subject, error, body, truncated FROM dead_letters FINAL WHERE error LIKE '" + marker + "%' ORDER BY stream_seq FORMAT TSV"
	want := strings.Join([]string{
		"malformed\tgateway\t" + subjects.DeadLetter(schema.ReasonMalformed) + "\t" + marker + ": line 1: expected a JSON object\t{oops\t0",
		"seq-gap\tworker\t" + subjects.DeadLetter(schema.ReasonSeqGap) + "\t" + marker + ": seq 3 after 1\t{\"runId\":\"r\",\"seq\":3}\t0",
		"too-large\tpublish\t" + subjects.DeadLetter(schema.ReasonTooLarge) + "\t" + marker + ": over the limit\t{\"runId\":\"big\"\t2000000",
	}, "\n")
	storeUntil(t, js, 3, q, want)
	if err := js.DeleteConsumer(ctx, schema.StreamDeadLetter, subjects.Prefix+"-store-dead-letters"); err != nil {
		t.Fatal(err)
	}
	storeUntil(t, js, 3, q, want) // in batches of 2: the first insert repeats
	if got := query(t, "SELECT count() FROM dead_letters WHERE error LIKE '"+marker+"%'"); got != "3" {
		t.Errorf("rows without FINAL after the replay: %s, want 3 (the insert of the same batch is dropped)", got)
	}
}

// The versions of the rules a worker loads and reloads, recorded in the
// fleet's rule manifest, are stored in rule_versions, once each.
func TestSinkRuleVersions(t *testing.T) {
	_, nc, js := jstest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := transport.Provision(ctx, js, transport.StreamConfig{Prefix: subjects.Prefix, Partitions: subjects.Partitions, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("rv-%d", time.Now().UnixNano())
	rule := func(formula string) *ruleset.Set {
		r, probs := ruleset.FromFormula(id, formula)
		if probs != nil {
			t.Fatal(probs)
		}
		r.Description = "no push before tests"
		return &ruleset.Set{Rules: []*ruleset.Rule{r}}
	}
	w, err := worker.New(nc, js, worker.Options{ID: "w1", Subjects: subjects, Rules: rule("F(RunTests)")})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	var changes []worker.RuleChange
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		changes, err = w.Reload(ctx, rule("G(!DeleteFile)"))
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(changes) != 1 || changes[0].VerdictID != id+"@2" {
		t.Fatalf("reload: %v %+v, want the rule's version 2", err, changes)
	}
	h, err := worker.Manifest(ctx, js, subjects.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range h {
		if r.ID != id {
			continue
		}
		for _, v := range r.Versions {
			want = append(want, fmt.Sprintf("%s\t%d\tno push before tests\t%s\t%s\t%s", id, v.Version, v.Mode, v.Text, v.Meaning))
		}
	}
	if len(want) != 2 {
		t.Fatalf("the manifest holds %d versions of %s, want 2", len(want), id)
	}
	q := "SELECT rule_id, version, description, mode, text, text_hash FROM rule_versions FINAL WHERE rule_id = '" + id + "' ORDER BY version FORMAT TSV"
	storeUntil(t, js, 1, q, strings.Join(want, "\n")) // the bucket keeps the latest history of a rule
	cancel()
	<-ran
}

// A verdict's row is stamped with the time of the event it is on, from its
// message's Ponens-Event-Time header; a verdict message without the header
// is stamped with the time the stream stored it.
func TestSinkVerdictEventTime(t *testing.T) {
	js := startStreams(t)
	ctx := context.Background()
	at := time.Date(2025, 3, 4, 9, 30, 1, 250e6, time.UTC)
	for i, header := range []bool{true, false} {
		run := fmt.Sprintf("evtime-%d", i)
		m := nats.NewMsg(subjects.Verdict(subjects.PartitionOf(run), run))
		m.Data = fmt.Appendf(nil, `{"runId":%q,"seq":2,"rule":{"id":"r"},"status":"violated","mode":"observe"}`, run)
		if header {
			m.Header.Set(schema.HeaderEventTime, schema.FormatEventTime(at))
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	storeUntil(t, js, 2, "SELECT count() FROM verdicts FINAL WHERE run_id LIKE 'evtime-%'", "2")
	if got := query(t, "SELECT toString(ts) FROM verdicts FINAL WHERE run_id = 'evtime-0'"); got != "2025-03-04 09:30:01.250" {
		t.Errorf("the verdict with the event's time in its header is stamped %s, want 2025-03-04 09:30:01.250", got)
	}
	st, err := js.Stream(ctx, schema.StreamVerdicts)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := query(t, "SELECT toUnixTimestamp64Milli(ts) FROM verdicts FINAL WHERE run_id = 'evtime-1'")
	if want := stored.Time.UnixMilli(); got != strconv.FormatInt(want, 10) {
		t.Errorf("the verdict without the header is stamped %s (ms), want %d, the time the stream stored it", got, want)
	}
}
