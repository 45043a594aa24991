package benchreport

import (
	"strings"
	"testing"
	"time"
)

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -45000: "-45,000"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestMarkdownSaysWhatIsMissing: a row without a figure says why, in the
// figure's column.
func TestMarkdownSaysWhatIsMissing(t *testing.T) {
	r := &Report{Machine: "m", When: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), Command: "ponens bench report",
		Rows: []Row{{Section: "s", What: "a", Figure: "1 events/s"}, {Section: "s", What: "b", Missing: "no nats-server"}}}
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Machine: m.", "```sh\nponens bench report\n```", "| s | a | 1 events/s |", "| s | b | not measured: no nats-server |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
