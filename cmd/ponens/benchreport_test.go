package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchReport runs `ponens bench report --quick` from the repository
// with a nats-server binary: every section of the performance table is
// there, each row with a figure (none "not measured"), and the machine
// and the command are named.
func TestBenchReport(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the pipeline and a three-process NATS cluster")
	}
	r := runBinary(t, "../..", nil, "bench", "report", "--quick", "--duration", "1s", "--events", "5000", "--nats-server", natsServerBinary(t))
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"Machine: ", "cores", "ponens bench report --quick"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the report does not name %q:\n%s", want, r.stdout)
		}
	}
	rows := regexp.MustCompile(`(?m)^\| ([^|]+) \| ([^|]+) \| ([^|]+) \|$`).FindAllStringSubmatch(r.stdout, -1)
	sections := map[string]int{}
	figure := regexp.MustCompile(`[1-9][0-9,]*(\.[0-9]+)? (events/s|bytes|MiB|/)`)
	for _, row := range rows[1:] { // the header
		if row[1] == "---" {
			continue
		}
		sections[row[1]]++
		if strings.HasPrefix(row[3], "not measured") || !figure.MatchString(row[3]) {
			t.Errorf("%s, %s: %q", row[1], row[2], row[3])
		}
	}
	want := map[string]int{"evaluator, one core": 4, "memory": 1, "offline check": 2, "pipeline, one process": 3, "pipeline, 3 workers, 3-node NATS cluster (R3)": 2}
	for s, n := range want {
		if sections[s] != n {
			t.Errorf("section %q: %d rows, want %d\n%s", s, sections[s], n, r.stdout)
		}
	}
}
