package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/monitor"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	fixture      = "../../examples/imports/otlp.json"
	protoFixture = "testdata/otlp.pb"
)

func importFile(t *testing.T, path string, opts Options) Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ImportFile(data, path, mapping.Default(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func encode(t *testing.T, evs []schema.Event) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			t.Fatalf("%s seq %d: %v", evs[i].RunID, evs[i].Seq, err)
		}
		enc.Encode(&evs[i])
	}
	return buf.Bytes()
}

// The fixture export: a run in the current conventions (provider.name,
// conversation.id, arguments structured and as a JSON string, a failing
// tool span, an execute_tool without a tool name, an HTTP parent span)
// and one in the pre-1.37 shape (gen_ai.system, operations only in span
// names). Its protobuf form gives the same events.
func TestGoldenEvents(t *testing.T) {
	res := importFile(t, fixture, Options{})
	got := encode(t, res.Events)
	golden := "testdata/otlp.events.jsonl"
	if *update {
		data, _ := os.ReadFile(fixture)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		pb, _ := req.MarshalProto()
		os.WriteFile(protoFixture, pb, 0o644)
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("events differ from %s (run with -update to accept):\n%s", golden, got)
	}
	if pb := encode(t, importFile(t, protoFixture, Options{}).Events); !bytes.Equal(pb, want) {
		t.Errorf("the protobuf form gives other events:\n%s", pb)
	}
	if len(res.Rejected) != 1 || res.Rejected[0].SpanID != "eee19b7ec3c1b17b" || !strings.Contains(res.Rejected[0].Reason, "without gen_ai.tool.name") {
		t.Errorf("rejected %+v", res.Rejected)
	}
	if res.Skipped["non-GenAI span"] != 1 {
		t.Errorf("skipped %v", res.Skipped)
	}
}

func TestShapes(t *testing.T) {
	res := importFile(t, fixture, Options{ModelCalls: ModelCallsAction})
	runs := schema.SplitRuns(res.Events)
	if len(runs) != 2 || runs[0].ID != "conv_5j66UpCpwteGg4YSxUnt7lPY" || runs[1].ID != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("runs %+v", runs)
	}
	for i, want := range []struct{ agent, provider string }{{"refund-fixer", `"openai"`}, {"Claude", `"anthropic"`}} {
		st := runs[i].Events[0].Start
		if st.Agent != want.agent || string(st.Extra["provider"]) != want.provider {
			t.Errorf("run %d: agent %q provider %s", i, st.Agent, st.Extra["provider"])
		}
		if last := runs[i].Events[len(runs[i].Events)-1]; last.Type != schema.TypeRunFinish {
			t.Errorf("run %d ends with %s", i, last.Type)
		}
	}
	if a := runs[0].Events[1].Action; a == nil || a.Type != "ModelCall" || a.ToolName != "gen_ai.chat" {
		t.Errorf("model call as an action: %+v", runs[0].Events[1])
	}
	if n := len(importFile(t, fixture, Options{ModelCalls: ModelCallsSkip}).Events); n != 13 {
		t.Errorf("model calls skipped: %d events, want 13", n)
	}
}

func TestExampleRulesVerdicts(t *testing.T) {
	set, probs := ruleset.Load("../../examples/rules")
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	eng, _ := monitor.NewEngine(set)
	violated := map[string]uint64{}
	for _, r := range schema.SplitRuns(importFile(t, fixture, Options{}).Events) {
		run := eng.NewRun(r.ID)
		for i := range r.Events {
			vs, err := run.Add(&r.Events[i])
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs {
				if v.Status == schema.StatusViolated {
					violated[r.ID+" "+v.Rule.ID] = v.Seq
				}
			}
		}
	}
	want := map[string]uint64{"conv_5j66UpCpwteGg4YSxUnt7lPY tests_before_commit": 7, "conv_5j66UpCpwteGg4YSxUnt7lPY research_before_edit": 5}
	if len(violated) != len(want) || violated["conv_5j66UpCpwteGg4YSxUnt7lPY tests_before_commit"] != 7 || violated["conv_5j66UpCpwteGg4YSxUnt7lPY research_before_edit"] != 5 {
		t.Errorf("violated %v, want %v", violated, want)
	}
}

// TestReceiver posts to the OTLP/HTTP receiver in front of a real
// JetStream: the spans of one run in two requests (JSON, then gzipped
// protobuf), partial success for a rejected span, 413 over the limit, 415
// for another content type, 400 for a body that does not decode.
func TestReceiver(t *testing.T) {
	_, _, js := jstest.Start(t)
	streams := transport.StreamConfig{Prefix: "ponens", Partitions: 2}
	if err := transport.Provision(context.Background(), js, streams); err != nil {
		t.Fatal(err)
	}
	pub := transport.NewPublisher(js, streams.Subjects(), transport.PublisherOptions{Retries: -1, Timeout: 2 * time.Second})
	t.Cleanup(func() { pub.Close() })
	srv := httptest.NewServer(Handler(NewConverter(mapping.Default(), Options{}), pub, HandlerOptions{MaxBodyBytes: 64 << 10}))
	t.Cleanup(srv.Close)

	data, _ := os.ReadFile(fixture)
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	// First the spans of the current-shape run, without its root span...
	first, second := splitRoot(t, req)
	status, body := post(t, srv.URL, ContentJSON, "", first)
	if status != http.StatusOK || !strings.Contains(string(body), `"rejectedSpans":"1"`) || !strings.Contains(string(body), "without gen_ai.tool.name") {
		t.Fatalf("JSON: %d %s", status, body)
	}
	// ...then the root spans, gzipped protobuf: the runs end.
	status, body = post(t, srv.URL, ContentProtobuf, "gzip", second)
	resp := ptraceotlp.NewExportResponse()
	if status != http.StatusOK || resp.UnmarshalProto(body) != nil || resp.PartialSuccess().RejectedSpans() != 0 {
		t.Fatalf("protobuf: %d %q", status, body)
	}
	// The first request sent again (an exporter retrying): accepted as
	// what it was, the span rejected then rejected for the same reason,
	// nothing stored twice (counted below).
	status, body = post(t, srv.URL, ContentJSON, "", first)
	if status != http.StatusOK || !strings.Contains(string(body), `"rejectedSpans":"1"`) || !strings.Contains(string(body), "without gen_ai.tool.name") {
		t.Fatalf("sent again after the end: %d %s", status, body)
	}
	// New spans of a run that has ended are rejected, the message naming
	// ten of them and counting the rest. (Without its root span, the
	// first request keyed the run by its trace id: the conversation id is
	// on the root span only.)
	status, body = post(t, srv.URL, ContentJSON, "", newSpanIDs(t, first))
	if status != http.StatusOK || !strings.Contains(string(body), `"rejectedSpans":"12"`) || !strings.Contains(string(body), "run 5b8efff798038103d269b633813fc60c has ended") || !strings.Contains(string(body), "and 2 more") {
		t.Fatalf("after the end: %d %s", status, body)
	}
	var stored []schema.Event
	for _, m := range jstest.Messages(t, js, schema.StreamEvents) {
		var ev schema.Event
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, ev)
	}
	want := importFile(t, fixture, Options{}).Events
	if len(stored) != len(want) {
		t.Fatalf("stored %d events, want %d", len(stored), len(want))
	}
	for _, r := range schema.SplitRuns(stored) {
		last := r.Events[len(r.Events)-1]
		if last.Type != schema.TypeRunFinish || int(last.Seq) != len(r.Events) {
			t.Errorf("run %s: %d events, last %s at seq %d", r.ID, len(r.Events), last.Type, last.Seq)
		}
	}

	big := bytes.Repeat([]byte(" "), 70<<10)
	if status, _ := post(t, srv.URL, ContentJSON, "", append([]byte("{}"), big...)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("over the limit: %d", status)
	}
	if status, _ := post(t, srv.URL, ContentJSON, "gzip", append([]byte("{}"), big...)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("over the limit once unzipped: %d", status)
	}
	if status, _ := post(t, srv.URL, "text/plain", "", []byte("{}")); status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", status)
	}
	if status, body := post(t, srv.URL, ContentJSON, "", []byte("{nope")); status != http.StatusBadRequest || !strings.Contains(string(body), "OTLP/JSON") {
		t.Errorf("bad JSON: %d %s", status, body)
	}
}

// splitRoot splits the fixture into the tool and model spans (JSON) and
// the invoke_agent root spans (protobuf).
func splitRoot(t *testing.T, req ptraceotlp.ExportRequest) ([]byte, []byte) {
	rest := ptraceotlp.NewExportRequest()
	req.Traces().CopyTo(rest.Traces())
	roots := ptraceotlp.NewExportRequest()
	req.Traces().CopyTo(roots.Traces())
	rss, rrs := rest.Traces().ResourceSpans(), roots.Traces().ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rss.At(i).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return strings.HasPrefix(s.Name(), "invoke_agent") })
		rrs.At(i).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return !strings.HasPrefix(s.Name(), "invoke_agent") })
	}
	a, err := rest.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	b, err := roots.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// newSpanIDs is the JSON export request body with every span given a new
// id (its parents' ids changed alike).
func newSpanIDs(t *testing.T, body []byte) []byte {
	t.Helper()
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	flip := func(id pcommon.SpanID) pcommon.SpanID {
		if id.IsEmpty() {
			return id
		}
		id[0] ^= 0xff
		return id
	}
	rss := req.Traces().ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		spans := rss.At(i).ScopeSpans().At(0).Spans()
		for j := 0; j < spans.Len(); j++ {
			sp := spans.At(j)
			sp.SetSpanID(flip(sp.SpanID()))
			sp.SetParentSpanID(flip(sp.ParentSpanID()))
		}
	}
	out, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func post(t *testing.T, url, contentType, encoding string, body []byte) (int, []byte) {
	t.Helper()
	if encoding == "gzip" {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// FuzzDecodeFile: no export crashes the decoder or the converter, and
// every event is a valid envelope.
func FuzzDecodeFile(f *testing.F) {
	data, _ := os.ReadFile(fixture)
	f.Add(data)
	pb, _ := os.ReadFile(protoFixture)
	f.Add(pb)
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ImportFile(data, "f", mapping.Default(), Options{}, nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		for i := range res.Events {
			if err := res.Events[i].Validate(); err != nil {
				t.Fatalf("invalid event: %v", err)
			}
		}
	})
}

// TestConvertSentAgain: an export converted again (an exporter retrying
// after its first attempt was not stored) gives the events it gave the
// first time, same runs and seqs, while its run is open and after it
// ended; a span rejected the first time is rejected again for its reason.
func TestConvertSentAgain(t *testing.T) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	conv := NewConverter(mapping.Default(), Options{})
	once := conv.Convert(req.Traces(), nil)
	if len(once.Events) == 0 || once.Duplicates != 0 {
		t.Fatalf("first: %d events, %d duplicates", len(once.Events), once.Duplicates)
	}
	again := conv.Convert(req.Traces(), nil)
	if !reflect.DeepEqual(once.Events, again.Events) {
		t.Errorf("sent again: %d events, not the first %d", len(again.Events), len(once.Events))
	}
	if again.Duplicates == 0 || !reflect.DeepEqual(once.Rejected, again.Rejected) {
		t.Errorf("sent again: %d duplicates, rejected %v (first %v)", again.Duplicates, again.Rejected, once.Rejected)
	}
}
