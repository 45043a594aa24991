package benchreport

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Options say what to measure and how long.
type Options struct {
	// Binary is the ponens executable run for the process measurements.
	Binary string
	// Repo is a clone of the repository: the rule classes of the
	// evaluator rows are read from its monitor/testdata.
	Repo string
	// NATSServer is a nats-server executable for the cluster row; empty
	// looks for nats-server on PATH.
	NATSServer string
	// Duration is how long each end-to-end load publishes.
	Duration time.Duration
	// Events is the size of the offline check's input.
	Events int
	// Quick shrinks every measurement (for a smoke test): the figures
	// are then not comparable with the table's.
	Quick bool
	// Progress, when set, receives one line per measurement as it starts.
	Progress io.Writer
	// Command is the command line that reproduces the report.
	Command string
}

// Row is one figure of the report.
type Row struct {
	Section string
	What    string
	Figure  string
	// Missing, when set, says why the figure was not measured.
	Missing string
}

// Report is every figure, with the machine they were measured on.
type Report struct {
	Machine string
	When    time.Time
	Command string
	Rows    []Row
}

// Run measures every figure in turn.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Binary == "" {
		return nil, fmt.Errorf("no ponens binary to run")
	}
	if o.Duration <= 0 {
		o.Duration = 20 * time.Second
	}
	if o.Events <= 0 {
		o.Events = 1_000_000
	}
	r := &Report{Machine: machine(), When: time.Now().UTC(), Command: o.Command}
	steps := []func(context.Context, Options) []Row{evaluatorRows, memoryRows, offlineRows, pipelineRows, clusterRows}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		r.Rows = append(r.Rows, step(ctx, o)...)
	}
	return r, ctx.Err()
}

func (o Options) say(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// Markdown writes the report as a Markdown section: the machine, the
// command, and one table row per figure.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## `ponens bench report`, %s\n\n", r.When.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s.\n\n", r.Machine)
	if r.Command != "" {
		fmt.Fprintf(&b, "```sh\n%s\n```\n\n", r.Command)
	}
	b.WriteString("| section | what | figure |\n|---|---|---|\n")
	for _, row := range r.Rows {
		fig := row.Figure
		if row.Missing != "" {
			fig = "not measured: " + row.Missing
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.Section, row.What, fig)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// machine names the CPU model, the cores, the memory and the Go version.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s %s/%s", model, runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
