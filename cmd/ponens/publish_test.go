package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
	"github.com/ponens/ponens/transport/jstest"
)

// publishFiles are the trace files TestPublish replays: an event stream of
// two runs and a reference trace.
var publishFiles = []string{"../../schema/testdata/stream.jsonl", "../../schema/testdata/reference/deploy_aborted.json"}

func TestPublish(t *testing.T) {
	srv, _, js := jstest.Start(t)
	url := srv.ClientURL()
	args := append([]string{"publish", "--url", url}, publishFiles...)

	// What should land where: each run on its partition, under its token.
	subjects := schema.Subjects{Prefix: "ponens", Partitions: schema.DefaultPartitions}
	want := map[string]uint64{}
	perPartition := map[int]uint64{}
	total := 0
	for _, f := range publishFiles {
		runs, err := tracefile.Read(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			k := subjects.PartitionOf(r.ID)
			want[fmt.Sprintf("ponens.events.p.%d.%s", k, schema.RunToken(r.ID))] += uint64(len(r.Events))
			perPartition[k] += uint64(len(r.Events))
			total += len(r.Events)
		}
	}

	stdout, stderr, code := runPonens(t, args...)
	wantOut := fmt.Sprintf("published %d events of 3 runs from 2 files to %s: %d stored, 0 already stored\n", total, url, total)
	if code != exitOK || stdout != wantOut || stderr != "" {
		t.Fatalf("exit %d\nstdout %q\nwant   %q\nstderr %q", code, stdout, wantOut, stderr)
	}
	got := jstest.SubjectCounts(t, js, schema.StreamEvents)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored subjects %v, want %v", got, want)
	}
	gotPartitions := map[int]uint64{}
	for subj, n := range got {
		var k int
		var token string
		if _, err := fmt.Sscanf(strings.ReplaceAll(subj, ".", " "), "ponens events p %d %s", &k, &token); err != nil {
			t.Fatalf("stored subject %q: %v", subj, err)
		}
		gotPartitions[k] += n
	}
	if fmt.Sprint(gotPartitions) != fmt.Sprint(perPartition) {
		t.Errorf("events per partition %v, want %v", gotPartitions, perPartition)
	}

	// Again: nothing new is stored.
	stdout, _, code = runPonens(t, args...)
	if code != exitOK || !strings.HasSuffix(stdout, fmt.Sprintf(": 0 stored, %d already stored\n", total)) {
		t.Errorf("second publish: exit %d, %q", code, stdout)
	}
	if n := len(jstest.Messages(t, js, schema.StreamEvents)); n != total {
		t.Errorf("%d events stored after publishing twice, want %d", n, total)
	}
}

func TestPublishBadInput(t *testing.T) {
	srv, _, js := jstest.Start(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	content := `{"v":1,"runId":"r","seq":1,"ts":"2025-01-01T00:00:00Z","type":"run.start"}` + "\n" +
		`{"v":1,"runId":"r","seq":2,"ts":"2025-01-01T00:00:00Z","type":"action","action":{"type":""}}` + "\n"
	if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad line", []string{bad}, bad + ":2:89: action.type: missing field: expected a non-empty string"},
		{"missing file", []string{filepath.Join(dir, "missing.jsonl")}, "missing.jsonl: no such file or directory"},
		{"no files", nil, "give at least one trace file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runPonens(t, append([]string{"publish", "--url", srv.ClientURL()}, tc.args...)...)
			if code != exitBadInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
	// Files are read before connecting: nothing was published.
	if _, err := js.Stream(context.Background(), schema.StreamEvents); !errors.Is(err, natsjs.ErrStreamNotFound) {
		t.Errorf("EVENTS exists after bad input: %v", err)
	}
}

func TestPublishFailures(t *testing.T) {
	srv, _, js := jstest.Start(t)
	// Another partition count than the configuration's: a configuration error.
	if err := transport.Provision(context.Background(), js, transport.StreamConfig{Partitions: 5}); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runPonens(t, "publish", "--url", srv.ClientURL(), publishFiles[0])
	if want := fmt.Sprintf("has 5 partitions, the configuration asks for %d", schema.DefaultPartitions); code != exitBadInput || !strings.Contains(stderr, want) {
		t.Errorf("partition change: exit %d, %q, want %q", code, stderr, want)
	}
	t.Setenv("PONENS_NATS_PARTITIONS", "5")
	if _, stderr, code := runPonens(t, "publish", "--url", srv.ClientURL(), publishFiles[0]); code != exitOK {
		t.Errorf("matching partitions: exit %d, %q", code, stderr)
	}

	// No server: nothing stored, exit 3. (Port 1 on loopback refuses.)
	_, stderr, code = runPonens(t, "publish", "--url", "nats://127.0.0.1:1", publishFiles[0])
	if code != exitUnavailable || !strings.Contains(stderr, "connect to nats://127.0.0.1:1") {
		t.Errorf("no server: exit %d, %q", code, stderr)
	}
}

// TestPublishServerKilled: the server dies mid-publish. `ponens publish`
// stops within --timeout, exits 3, and names per run the seqs that were
// and were not acknowledged; every seq it reports as acknowledged is
// stored once the server is back.
func TestPublishServerKilled(t *testing.T) {
	dir := t.TempDir()
	s, err := transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	listen := s.Addr().String()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	_, js := jstest.Connect(t, s.ClientURL())
	const runs, perRun = 100, 2000
	var b strings.Builder
	for seq := 1; seq <= perRun; seq++ {
		for r := range runs {
			if seq == 1 {
				fmt.Fprintf(&b, `{"v":1,"runId":"k-%d","seq":1,"ts":"2026-01-01T00:00:00Z","type":"run.start","start":{}}`+"\n", r)
				continue
			}
			fmt.Fprintf(&b, `{"v":1,"runId":"k-%d","seq":%d,"ts":"2026-01-01T00:00:00Z","type":"action","action":{"id":%d,"type":"ReadFile"}}`+"\n", r, seq, seq)
		}
	}
	file := filepath.Join(dir, "big.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ponensBinary(t), "publish", "--url", s.ClientURL(), "--timeout", "3s", file)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if info, err := js.Stream(context.Background(), schema.StreamEvents); err == nil && info.CachedInfo().State.Msgs >= 5000 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Shutdown()
	s.WaitForShutdown()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUnavailable {
		t.Fatalf("publish: %v, want exit 3\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	var lines []string // the NATS client's log lines are not the command's
	for l := range strings.SplitSeq(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(l, "ponens publish: ") {
			lines = append(lines, l)
		}
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, "runs incomplete; publishing the same files again is safe") {
		t.Errorf("last line %q, want the summary", last)
	}
	// What publish said it stored, per run.
	report := regexp.MustCompile(`^ponens publish: run "(k-\d+)": acknowledged (none|seq ([\d,-]+)); not acknowledged seq ([\d,-]+)$`)
	acked := map[string]bool{}
	reported := map[string]bool{}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, `ponens publish: run "`) {
			continue // the connection's own errors (a reset, a broken pipe), once each
		}
		m := report.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("stderr line %q is not a run report", l)
		}
		reported[m[1]] = true
		for _, seq := range expandRanges(t, m[3]) {
			acked[schema.EventMsgID(m[1], seq)] = true
		}
	}
	if len(reported) == 0 {
		t.Fatal("no run reported incomplete though the server died mid-publish")
	}
	for r := range runs {
		if id := fmt.Sprintf("k-%d", r); !reported[id] {
			for seq := uint64(1); seq <= perRun; seq++ {
				acked[schema.EventMsgID(id, seq)] = true
			}
		}
	}
	s, err = transport.StartEmbedded(transport.EmbeddedOptions{StoreDir: filepath.Join(dir, "nats"), Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	_, js = jstest.Connect(t, s.ClientURL())
	stored := map[string]bool{}
	for _, m := range jstest.Messages(t, js, schema.StreamEvents) {
		stored[m.Headers().Get(natsjs.MsgIDHeader)] = true
	}
	missing := 0
	for id := range acked {
		if !stored[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d events reported acknowledged are not stored", missing)
	}
}

// expandRanges reads "1-3,5" as 1 2 3 5; "" as nothing.
func expandRanges(t *testing.T, s string) []uint64 {
	var out []uint64
	for part := range strings.SplitSeq(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, _ := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			t.Fatalf("range %q: %v", s, err)
		}
		z := a
		if hi != "" {
			if z, err = strconv.ParseUint(hi, 10, 64); err != nil {
				t.Fatalf("range %q: %v", s, err)
			}
		}
		for v := a; v <= z; v++ {
			out = append(out, v)
		}
	}
	return out
}

// TestPublishToBoundedStreams: a service that bounds its streams
// (nats.events.max_msgs) takes events from an agent whose configuration
// says nothing of the bounds: the agent uses the streams as they are
// instead of trying to change them, which its role may not.
func TestPublishToBoundedStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs ponens serve")
	}
	work := t.TempDir()
	url, _, _ := startServe(t, work, "PONENS_NATS_EVENTS_MAX_MSGS=1000")
	traces, _ := filepath.Abs("../../examples/traces")
	r := runBinary(t, work, nil, "publish", "--url", url, traces)
	if r.code != 0 || !strings.Contains(r.stdout, "published ") {
		t.Fatalf("publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
