package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// TestDeadLettersCommands: list, filter and replay the dead letters with
// the real binary against a real server, and tail a new one as it is
// stored.
func TestDeadLettersCommands(t *testing.T) {
	srv, _, js := jstest.Start(t)
	url := srv.ClientURL()
	sub := schema.Subjects{Prefix: "ponens", Partitions: schema.DefaultPartitions}
	if err := transport.Provision(context.Background(), js, transport.StreamConfig{Partitions: sub.Partitions}); err != nil {
		t.Fatal(err)
	}
	dl := transport.NewDeadLetters(js, sub)
	gapped := `{"v":1,"runId":"gap-run","seq":3,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{}}`
	for _, d := range []struct{ reason, body, err string }{
		{schema.ReasonMalformed, `{"v":1,"runId":`, "event:1:16: malformed JSON"},
		{schema.ReasonSeqGap, gapped, `runId "gap-run": seq 1 to 2 never arrived`},
	} {
		if err := dl.Send(context.Background(), d.reason, schema.SourceWorker, errors.New(d.err), []byte(d.body)); err != nil {
			t.Fatal(err)
		}
	}

	r := runBinary(t, t.TempDir(), nil, "deadletters", "--url", url)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != exitOK || len(lines) != 2 || !strings.Contains(lines[0], "#1  malformed") || !strings.Contains(lines[0], "run -  event:1:16: malformed JSON") ||
		!strings.Contains(lines[1], `#2  seq-gap        worker   run "gap-run"  runId "gap-run": seq 1 to 2 never arrived`) {
		t.Errorf("deadletters: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runBinary(t, t.TempDir(), nil, "deadletters", "--url", url, "--reason", "seq-gap", "--since", "1h", "--json")
	var got struct {
		Seq    uint64 `json:"seq"`
		Reason string `json:"reason"`
		RunID  string `json:"runId"`
		Body   string `json:"body"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Seq != 2 || got.Reason != "seq-gap" || got.RunID != "gap-run" || got.Body != gapped {
		t.Errorf("--json: %v %+v\n%s", err, got, r.stdout)
	}

	r = runBinary(t, t.TempDir(), nil, "deadletters", "replay", "--url", url, "--reason", "seq-gap")
	if r.code != exitOK || !strings.Contains(r.stdout, `#2  seq-gap  run "gap-run"  sent`) || !strings.Contains(r.stdout, "replayed 1 dead letters: 1 events stored, 0 already stored, 0 not sent") {
		t.Errorf("replay: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if ids := msgIDs(t, js); len(ids) != 1 || ids[0] != schema.EventMsgID("gap-run", 3) {
		t.Errorf("EVENTS after the replay: %v", ids)
	}
	r = runBinary(t, t.TempDir(), nil, "deadletters", "replay", "--url", url)
	if r.code != exitBadInput || !strings.Contains(r.stdout, "#1  malformed  run \"\"  not sent: dead letter 1:") ||
		!strings.Contains(r.stdout, "replayed 2 dead letters: 0 events stored, 1 already stored, 1 not sent") {
		t.Errorf("replay of a malformed one: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	tail := exec.Command(ponensBinary(t), "deadletters", "tail", "--url", url, "--json")
	out, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tail.Process.Kill() })
	read := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		read <- line
	}()
	var line string
	for deadline := time.Now().Add(30 * time.Second); line == "" && time.Now().Before(deadline); {
		// tail starts at its own start: send until it has seen one.
		if err := dl.Send(context.Background(), schema.ReasonAfterEnd, schema.SourceWorker, errors.New("after the end "+time.Now().String()), []byte(`{"runId":"late"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case line = <-read:
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !strings.Contains(line, `"reason":"after-end"`) || !strings.Contains(line, `"runId":"late"`) {
		t.Errorf("tail printed %q", line)
	}
	_ = tail.Process.Signal(syscall.SIGINT)
	if err := tail.Wait(); err != nil {
		t.Errorf("tail stopped by SIGINT: %v", err)
	}
}

// msgIDs lists the message ids stored in EVENTS.
func msgIDs(t *testing.T, js natsjs.JetStream) []string {
	t.Helper()
	var ids []string
	for _, m := range jstest.Messages(t, js, schema.StreamEvents) {
		ids = append(ids, m.Headers().Get("Nats-Msg-Id"))
	}
	return ids
}
