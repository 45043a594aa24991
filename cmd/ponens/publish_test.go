package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/ingest/jetstream"
	"github.com/ponens/ponens/ingest/jetstream/jstest"
	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/schema"
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
	if err := jetstream.Provision(context.Background(), js, jetstream.StreamConfig{Partitions: 5}); err != nil {
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
