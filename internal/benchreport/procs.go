package benchreport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ponens/ponens/internal/gen"
)

// child is the outcome of one child process: its output, how long it
// took, and its peak resident memory.
type child struct {
	stdout, stderr bytes.Buffer
	wall           time.Duration
	maxRSS         int64 // bytes
	code           int
}

// runChild runs bin with args and env added to the environment, and
// waits for it.
func runChild(ctx context.Context, env []string, bin string, args ...string) (*child, error) {
	c := &child{}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &c.stdout, &c.stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	hwm := make(chan int64, 1)
	go func() { hwm <- pollPeak(cmd.Process.Pid, done) }()
	err := cmd.Wait()
	c.wall = time.Since(start)
	close(done)
	c.maxRSS = <-hwm
	if cmd.ProcessState != nil {
		c.code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && c.maxRSS == 0 {
			// Without /proc: the kernel's figure, which for a child
			// started from this process can include this process's
			// resident memory at the start.
			c.maxRSS = int64(ru.Maxrss) * 1024
		}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = nil // the exit code is the caller's to judge
	}
	return c, err
}

// pollPeak reads the peak resident memory (VmHWM) of process pid every
// 20 ms until done, and returns the last value read, in bytes; 0 when it
// could not be read.
func pollPeak(pid int, done <-chan struct{}) int64 {
	file := fmt.Sprintf("/proc/%d/status", pid)
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(file); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				var kb int64
				if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
					peak = max(peak, kb*1024)
				}
			}
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

// failed says why a child did not give a figure.
func (c *child) failed(what string) string {
	msg := strings.TrimSpace(c.stderr.String())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	return fmt.Sprintf("%s exited %d: %s", what, c.code, msg)
}

// offlineRows checks generated JSONL files with `ponens check` and the
// twenty pure rules: one long run, and many interleaved runs.
func offlineRows(ctx context.Context, o Options) []Row {
	rules := filepath.Join(o.Repo, "monitor/testdata/pure20.yaml")
	shapes := []struct{ runs int }{{1}, {10_000}}
	if o.Quick {
		shapes = []struct{ runs int }{{1}, {100}}
	}
	var rows []Row
	for _, s := range shapes {
		row := Row{Section: "offline check", What: fmt.Sprintf("`ponens check`, JSONL, %s events in %s, 20 pure rules", thousands(float64(o.Events)), plural(s.runs, "run"))}
		if _, err := os.Stat(rules); err != nil {
			row.Missing = "monitor/testdata/pure20.yaml is not here: run from a clone of the repository (--repo)"
			rows = append(rows, row)
			continue
		}
		o.say("offline: %s", row.What)
		fig, err := checkFile(ctx, o, rules, s.runs)
		if err != nil {
			row.Missing = err.Error()
		} else {
			row.Figure = fig
		}
		rows = append(rows, row)
	}
	return rows
}

// checkFile writes a stream of runs interleaved runs and checks it.
func checkFile(ctx context.Context, o Options, rules string, runs int) (string, error) {
	dir, err := os.MkdirTemp("", "ponens-bench-report-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "events.jsonl")
	f, err := os.Create(file)
	if err != nil {
		return "", err
	}
	if err := gen.WriteStream(f, runs, o.Events); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	c, err := runChild(ctx, nil, o.Binary, "check", "--rules", rules, "--out", filepath.Join(dir, "out"), file)
	if err != nil {
		return "", err
	}
	if c.code > 1 {
		return "", errors.New(c.failed("ponens check"))
	}
	return fmt.Sprintf("%s events/s, %.0f MiB resident", thousands(float64(o.Events)/c.wall.Seconds()), float64(c.maxRSS)/(1<<20)), nil
}

// benchResult is what `ponens bench --json` prints.
type benchResult struct {
	EventsPerSec float64 `json:"events_per_sec"`
	Verdict      struct {
		P50, P99 float64
	} `json:"verdict_latency_ms"`
	Alert struct {
		P50, P99 float64
		Samples  int
	} `json:"alert_latency_ms"`
	OpenRuns int   `json:"open_runs"`
	RSSBytes int64 `json:"rss_bytes"`
}

// bench runs `ponens bench --json` with args.
func bench(ctx context.Context, o Options, env []string, args ...string) (*benchResult, error) {
	c, err := runChild(ctx, env, o.Binary, append([]string{"bench", "--json"}, args...)...)
	if err != nil {
		return nil, err
	}
	if c.code != 0 {
		return nil, errors.New(c.failed("ponens bench"))
	}
	var r benchResult
	if err := json.Unmarshal(c.stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("ponens bench --json printed %q: %v", strings.TrimSpace(c.stdout.String()), err)
	}
	return &r, nil
}

// loads are the end-to-end measurements: at full speed, at half the
// target rate for the alert latency, and with many open runs.
func loads(o Options) []struct{ what, rate, runs, duration string } {
	d, open, openFor := o.Duration.String(), "100000", "10s"
	if o.Quick {
		open, openFor = "2000", d
	}
	return []struct{ what, rate, runs, duration string }{
		{"events/s at full speed; publish → verdict p50 / p99", "0", "1000", d},
		{"publish → alert p50 / p99 at 25,000 events/s offered", "25000", "1000", d},
		{"resident memory with " + thousands(atof(open)) + " open runs (20,000 events/s offered)", "20000", open, openFor},
	}
}

func atof(s string) float64 {
	var f float64
	fmt.Sscan(s, &f)
	return f
}

// pipelineRows loads the pipeline of `ponens serve`, started in the bench
// process, on loopback.
func pipelineRows(ctx context.Context, o Options) []Row {
	var rows []Row
	for i, l := range loads(o) {
		row := Row{Section: "pipeline, one process", What: l.what}
		o.say("pipeline: %s", l.what)
		r, err := bench(ctx, o, nil, "--rate", l.rate, "--runs", l.runs, "--duration", l.duration)
		switch {
		case err != nil:
			row.Missing = err.Error()
		default:
			row.Figure = describe(i, r)
		}
		rows = append(rows, row)
	}
	return rows
}

// describe gives the figure of the i-th load of loads.
func describe(i int, r *benchResult) string {
	switch i {
	case 0:
		return fmt.Sprintf("%s events/s; %.1f / %.1f ms", thousands(r.EventsPerSec), r.Verdict.P50, r.Verdict.P99)
	case 1:
		if r.Alert.Samples == 0 {
			return fmt.Sprintf("no alerts timed (%s events/s processed)", thousands(r.EventsPerSec))
		}
		return fmt.Sprintf("%.1f / %.1f ms (%s events/s processed)", r.Alert.P50, r.Alert.P99, thousands(r.EventsPerSec))
	default:
		if r.RSSBytes == 0 {
			return fmt.Sprintf("%s open runs; resident memory not measured (another process)", thousands(float64(r.OpenRuns)))
		}
		return fmt.Sprintf("%.0f MiB with %s runs open", float64(r.RSSBytes)/(1<<20), thousands(float64(r.OpenRuns)))
	}
}

// freeAddr is a loopback address no one listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return thousands(float64(n)) + " " + what + "s"
}
