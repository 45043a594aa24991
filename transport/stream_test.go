package transport_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

func TestProvision(t *testing.T) {
	_, _, js := jstest.Start(t)
	cfg := transport.StreamConfig{Prefix: "acme.ponens", Partitions: 8, Duplicates: 10 * time.Minute, VerdictDuplicates: time.Hour, MaxAge: 168 * time.Hour}
	for range 2 { // idempotent
		provision(t, js, cfg)
	}
	want := map[string]struct {
		subject string
		dup     time.Duration
	}{
		schema.StreamEvents:     {"acme.ponens.events.*", 10 * time.Minute},
		schema.StreamVerdicts:   {"acme.ponens.verdicts.>", time.Hour},
		schema.StreamDeadLetter: {"acme.ponens.dlq.>", 0},
	}
	for name, w := range want {
		s, err := js.Stream(ctxT(t), name)
		if err != nil {
			t.Fatal(err)
		}
		c := s.CachedInfo().Config
		if len(c.Subjects) != 1 || c.Subjects[0] != w.subject || c.MaxAge != 168*time.Hour || c.Retention != natsjs.LimitsPolicy {
			t.Errorf("%s: subjects %v, max age %s, retention %v", name, c.Subjects, c.MaxAge, c.Retention)
		}
		if w.dup != 0 && c.Duplicates != w.dup {
			t.Errorf("%s: duplicate window %s, want %s", name, c.Duplicates, w.dup)
		}
		if name == schema.StreamEvents {
			if c.SubjectTransform == nil || c.SubjectTransform.Destination != "acme.ponens.events.p.{{partition(8,1)}}.{{wildcard(1)}}" {
				t.Errorf("EVENTS transform %+v", c.SubjectTransform)
			}
		}
	}

	// A changed window is applied; a changed partition count is refused.
	cfg.Duplicates = 5 * time.Minute
	provision(t, js, cfg)
	s, _ := js.Stream(ctxT(t), schema.StreamEvents)
	if d := s.CachedInfo().Config.Duplicates; d != 5*time.Minute {
		t.Errorf("duplicate window after update: %s", d)
	}
	cfg.Partitions = 16
	err := transport.Provision(context.Background(), js, cfg)
	if !errors.Is(err, transport.ErrPartitionChange) || !strings.Contains(err.Error(), "has 8 partitions, the configuration asks for 16") {
		t.Errorf("partition change: %v", err)
	}
	cfg.Partitions = 0
	if err := transport.Provision(context.Background(), js, cfg); err == nil {
		t.Error("0 partitions accepted")
	}
}

func TestDeadLetters(t *testing.T) {
	_, nc, js := jstest.Start(t)
	provision(t, js, testStreams)
	dlq := transport.NewDeadLetters(js, testStreams.Subjects())
	cause := &schema.FieldError{Field: "type", Err: schema.ErrUnknownType, Got: `"nope"`}
	if err := dlq.Send(ctxT(t), schema.ReasonUnknownType, schema.SourceGateway, cause, []byte(`{"type":"nope"}`)); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("x", int(nc.MaxPayload())+10))
	if err := dlq.Send(ctxT(t), schema.ReasonTooLarge, schema.SourcePublish, errors.New("line 1\nline 2"), big); err != nil {
		t.Fatal(err)
	}
	if err := dlq.Send(ctxT(t), "not a token", schema.SourceGateway, nil, nil); err == nil {
		t.Error("a reason with spaces was accepted")
	}
	msgs := readAll(t, js, schema.StreamDeadLetter)
	if len(msgs) != 2 {
		t.Fatalf("%d dead letters", len(msgs))
	}
	m := msgs[0]
	h := m.Headers()
	if m.Subject() != "ponens.dlq.unknown-type" || string(m.Data()) != `{"type":"nope"}` ||
		h.Get(schema.HeaderReason) != "unknown-type" || h.Get(schema.HeaderSource) != "gateway" ||
		h.Get(schema.HeaderError) != `type: unknown event type: "nope"` || h.Get(schema.HeaderTruncated) != "" {
		t.Errorf("dead letter %s %q %v", m.Subject(), m.Data(), h)
	}
	m = msgs[1]
	h = m.Headers()
	if h.Get(schema.HeaderTruncated) != itoa(len(big)) || len(m.Data()) >= len(big) || h.Get(schema.HeaderError) != "line 1; line 2" {
		t.Errorf("oversize dead letter: %d bytes, headers %v", len(m.Data()), h)
	}
}

func TestStartEmbeddedErrors(t *testing.T) {
	if _, err := transport.StartEmbedded(transport.EmbeddedOptions{}); err == nil {
		t.Error("no store directory accepted")
	}
	if _, err := transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:x"}); err == nil {
		t.Error("bad port accepted")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	start := time.Now()
	_, err = transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: t.TempDir(), Listen: taken.Addr().String(), ReadyTimeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "address already in use") || time.Since(start) > 30*time.Second {
		t.Errorf("port in use: %v after %s", err, time.Since(start))
	}
}

// TestDeadLetterIDs: the same input refused again for the same reason is
// stored once (a worker replaying after a crash refuses the same events
// again); another reason or another input is another dead letter. The
// stream's bounds come from the configuration.
func TestDeadLetterIDs(t *testing.T) {
	_, _, js := jstest.Start(t)
	cfg := testStreams
	cfg.DeadLetters = transport.Limits{MaxBytes: 1 << 20, MaxAge: time.Hour}
	provision(t, js, cfg)
	dlq := transport.NewDeadLetters(js, cfg.Subjects())
	const afterText = "run r: seq 9 after the run ended"
	after := errors.New(afterText)
	for _, d := range []struct {
		reason, body string
	}{{schema.ReasonAfterEnd, `{"seq":9}`}, {schema.ReasonAfterEnd, `{"seq":9}`}, {schema.ReasonAfterEnd, `{"seq":9}`},
		{schema.ReasonSeqRepeat, `{"seq":9}`}, {schema.ReasonAfterEnd, `{"seq":10}`}} {
		if err := dlq.Send(ctxT(t), d.reason, schema.SourceWorker, after, []byte(d.body)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range readAll(t, js, schema.StreamDeadLetter) {
		got = append(got, m.Headers().Get(natsjs.MsgIDHeader)+" "+string(m.Data()))
	}
	want := []string{
		transport.DeadLetterID(schema.ReasonAfterEnd, afterText, []byte(`{"seq":9}`)) + ` {"seq":9}`,
		transport.DeadLetterID(schema.ReasonSeqRepeat, afterText, []byte(`{"seq":9}`)) + ` {"seq":9}`,
		transport.DeadLetterID(schema.ReasonAfterEnd, afterText, []byte(`{"seq":10}`)) + ` {"seq":10}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dead letters\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(want[0], "dl:after-end:") {
		t.Errorf("id %q, want dl:<reason>:<hash>", want[0])
	}
	st, err := js.Stream(ctxT(t), schema.StreamDeadLetter)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.MaxBytes != 1<<20 || c.MaxAge != time.Hour || c.Discard != natsjs.DiscardOld {
		t.Errorf("DEADLETTER bounds %d bytes, %s, discard %v", c.MaxBytes, c.MaxAge, c.Discard)
	}
}
