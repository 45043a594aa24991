package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/examples"
	"github.com/ponens/ponens/internal/loadgen"
	"github.com/ponens/ponens/internal/pipeline"
	"github.com/ponens/ponens/policy/ruleset"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/sink"
	"github.com/ponens/ponens/sink/chdb"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newBenchCommand) }

// benchFlags are the flags of `ponens bench`.
type benchFlags struct {
	url          string
	prefix       string
	partitions   int
	workers      int
	rf           ruleFlags
	duration     time.Duration
	runs         int
	rate         float64
	violations   float64
	seed         uint64
	inFlight     int
	maxBacklog   int
	drainTimeout time.Duration
	asJSON       bool
	noStore      bool
	cpuProfile   string
	memProfile   string
	samples      string
	webhook      bool
}

func newBenchCommand() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench [--url URL] [--rules PATH]... [--duration DURATION] [--runs N] [--rate NUMBER] [--json]",
		Short: "Load the streaming pipeline and measure throughput, latency and memory",
		Long: `Publish a reproducible load (fixed --seed) of --runs concurrent agent runs
and measure the pipeline end to end: events per second acknowledged by the
stream and processed by the workers (verdicts stored), publish → verdict and
publish → alert latency (p50, p99), the runs held open, and resident memory.

All runs start first; then one action of each run in turn for --duration,
at --rate events per second (0: as fast as the pipeline absorbs them, with at
most --max-backlog events waiting for a worker); after the measurement every
run is closed. A share --violations of the actions are mistakes, so that
there are violations and alerts to time.

Without --url it starts the pipeline of ` + "`ponens serve`" + ` in this process, on
loopback, with a temporary JetStream store that is removed afterwards:
an embedded NATS server, --workers monitor workers with --rules (default:
the example rules built into the binary, those of examples/rules), the
alert stage and the sink into an embedded store in the same temporary
directory (--no-store: none; without the engine installed by make deps it
runs without, and the report's store line says which); the resident memory
is then this process's. With --url it
loads a running ` + "`ponens serve`" + ` (same --prefix and --partitions) and does
not measure its memory. docs/LOAD.md defines every figure. Stops by itself,
or on SIGINT or SIGTERM.`,
		Example: `  ponens bench --duration 5s --runs 200
  ponens bench --rules examples/rules --rate 20000 --json
  ponens bench --url nats://127.0.0.1:4222 --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runBench(cmd, &f)
			var ex *exitError
			if err != nil && !errors.As(err, &ex) {
				err = exitWith(exitBadInput, "ponens bench: %v", err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "NATS URL of a running `ponens serve` (empty: start an embedded pipeline)")
	fl.StringVar(&f.prefix, "prefix", schema.DefaultPrefix, "subject and stream prefix")
	fl.IntVar(&f.partitions, "partitions", schema.DefaultPartitions, "partitions of the events stream")
	fl.IntVar(&f.workers, "workers", 2, "embedded: monitor workers")
	f.rf.register(cmd)
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "how long actions are published")
	fl.IntVar(&f.runs, "runs", 1000, "concurrent runs, all open during the measurement")
	fl.Float64Var(&f.rate, "rate", 0, "events per second (0: as fast as the pipeline absorbs them)")
	fl.Float64Var(&f.violations, "violations", 0.005, "chance that an action breaks a rule")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the load")
	fl.IntVar(&f.inFlight, "in-flight", 4096, "events published but not yet acknowledged by the stream, at most")
	fl.IntVar(&f.maxBacklog, "max-backlog", 50_000, "hold publishing back while more events than this wait for a worker")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 60*time.Second, "how long to wait for the workers to catch up")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as one JSON object")
	fl.BoolVar(&f.webhook, "webhook", false, "also measure publish → webhook received: a loopback webhook subscribed to every violation through the alert stage")
	fl.BoolVar(&f.noStore, "no-store", false, "embedded: run without the sink into the embedded store")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the load to this file")
	fl.StringVar(&f.memProfile, "memprofile", "", "write a heap profile at the measuring point to this file")
	fl.StringVar(&f.samples, "samples", "", "write every latency sample (kind, published at, latency) as CSV to this file")
	_ = fl.MarkHidden("samples")
	_ = fl.MarkHidden("cpuprofile")
	_ = fl.MarkHidden("memprofile")
	cmd.AddCommand(newBenchReportCommand())
	return cmd
}

func runBench(cmd *cobra.Command, f *benchFlags) error {
	if f.url != "" {
		for _, name := range []string{"workers", "rules", "formula", "id", "no-store"} {
			if cmd.Flags().Changed(name) {
				return exitWith(exitBadInput, "ponens bench: --%s is for the embedded pipeline; with --url the running server's workers and rules are used", name)
			}
		}
	}
	if f.partitions < 1 || f.workers < 1 {
		return exitWith(exitBadInput, "ponens bench: --partitions and --workers must be at least 1")
	}
	ctx, stop := commandContext(cmd)
	defer stop()
	out := cmd.OutOrStdout()
	sub := schema.Subjects{Prefix: f.prefix, Partitions: f.partitions}
	opts := loadgen.Options{
		Subjects: sub, Runs: f.runs, Duration: f.duration, Rate: f.rate, Violations: f.violations, Seed: f.seed,
		MaxInFlight: f.inFlight, MaxBacklog: f.maxBacklog, DrainTimeout: f.drainTimeout,
		KeepSamples: f.samples != "", Webhook: f.webhook,
	}
	if !f.asJSON {
		opts.Progress = cmd.ErrOrStderr()
	}

	cfg, err := loadConfig(cmd, nil)
	if err != nil {
		return err
	}
	natsCfg := cfg.NATS
	natsCfg.URL = f.url
	url, where, storeRan := f.url, "", ""
	if f.url == "" {
		set, err := benchRules(cmd, &f.rf)
		if err != nil {
			return err
		}
		level := new(slog.LevelVar)
		level.Set(slog.LevelWarn)
		log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
		memLimit := setMemoryLimit(cfg.Runtime, log)
		e, err := startEmbedded(ctx, f, cfg, set, log)
		if err != nil {
			return err
		}
		defer func() {
			// Stopping, a worker warns of every lease it could not renew
			// because it was stopping: not news.
			level.Set(slog.LevelError)
			e.stop()
		}()
		url, natsCfg = e.p.URL(), e.cfg
		rules := fmt.Sprintf("%d rules", len(set.Rules))
		if !cmd.Flags().Changed("rules") && !cmd.Flags().Changed("formula") {
			rules += " (the built-in examples)"
		}
		where = fmt.Sprintf("embedded pipeline on %s: NATS JetStream (temporary store), %d workers, %s, alert stage, %s", url, f.workers, rules, e.store)
		storeRan = e.store
		if memLimit > 0 {
			where += fmt.Sprintf("; Go memory limit %d MiB (runtime.memory_limit)", memLimit>>20)
		}
		opts.Measure = measureProcess(f.memProfile, e.sink)
		opts.CPUTime = processCPU
	} else {
		// A server that keeps its streams has seen earlier loads: new runIds.
		opts.RunPrefix = "bench-" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-r"
		where = "ponens serve at " + f.url
	}

	pubConn, err := connectNATS(natsCfg, transport.RoleAgent, "ponens bench", false)
	if err != nil {
		return err
	}
	defer pubConn.Close()
	subConn, err := connectNATS(natsCfg, transport.RoleAdmin, "ponens bench", false) // reads the consumers' progress
	if err != nil {
		return err
	}
	defer subConn.Close()

	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if !f.asJSON {
		fmt.Fprintf(out, "bench     %s\n", where)
		fmt.Fprintf(out, "load      %d runs, %s of actions at %s, seed %d, violations %g per action\n",
			f.runs, f.duration, rateText(f.rate, f.maxBacklog), f.seed, f.violations)
	}
	res, runErr := loadgen.Run(ctx, pubConn, subConn, opts)
	runErr = orExit(exitUnavailable, runErr)
	if runErr != nil && res.Published == 0 {
		return runErr
	}
	res.Store = storeRan
	if f.samples != "" {
		if err := writeSamples(f.samples, res.Samples); err != nil {
			return err
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printBench(out, res, f.url != "", f.workers)
	}
	return runErr
}

// benchRules loads --rules and --formula, or the example rules built into
// the binary when neither is given.
func benchRules(cmd *cobra.Command, rf *ruleFlags) (*ruleset.Set, error) {
	if len(rf.rules) == 0 && len(rf.formulas) == 0 {
		dir, err := builtinRules()
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		rf.rules = []string{dir}
	}
	return loadRules(cmd, rf)
}

// builtinRules writes the example rules built into the binary
// (examples.Rules) to a new temporary directory and returns it; the caller
// removes it.
func builtinRules() (string, error) {
	dir, err := os.MkdirTemp("", "ponens-rules-*")
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(examples.Rules, "rules", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := examples.Rules.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path.Base(p)), data, 0o644)
	})
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("the built-in rules: %w", err)
	}
	return dir, nil
}

func rateText(rate float64, backlog int) string {
	if rate == 0 {
		return fmt.Sprintf("full speed (at most %d events waiting for a worker)", backlog)
	}
	return fmt.Sprintf("%g events/s", rate)
}

// startEmbedded starts, in a temporary directory, the pipeline of
// `ponens serve` under cfg (its NATS stream settings, worker tunables and
// server TLS; the prefix and partitions of f): an embedded NATS server
// with generated per-role nkeys, each part connecting in its role,
// f.workers workers, the alert stage, and the sink into an embedded store
// in the same directory unless f.noStore. It returns once the workers
// share every partition and the alert stage and the sink have their
// consumers. store says whether the store runs, and if not, why.
func startEmbedded(ctx context.Context, f *benchFlags, cfg config.Config, set *ruleset.Set, log *slog.Logger) (_ *embeddedServer, err error) {
	dir, err := os.MkdirTemp("", "ponens-bench-*")
	if err != nil {
		return nil, err
	}
	e := &embeddedServer{dir: dir, log: log, closeStore: func() {}}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()
	natsCfg := cfg.NATS
	natsCfg.StoreDir, natsCfg.Prefix, natsCfg.Partitions = filepath.Join(dir, "nats"), f.prefix, f.partitions
	natsCfg.User, natsCfg.Password, natsCfg.NkeySeedFile, natsCfg.CredsFile = "", "", "", ""
	natsCfg.Server.Users = config.ServerUsers{}
	emb, _, err := embeddedNATS(natsCfg, "ponens bench", "127.0.0.1:-1", "ponens-bench", io.Discard)
	if err != nil {
		return nil, err
	}
	sub := streamConfig(natsCfg).Subjects()
	ids := make([]string, f.workers)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d-%d", os.Getpid(), i)
	}
	opts := pipeline.Options{
		NATS:     pipelineNATS(natsCfg, transport.RoleAdmin, "ponens bench", false, log),
		Subjects: sub, Logger: log,
		Workers: &pipeline.WorkersOptions{IDs: ids, Worker: workerOptions(cfg, set)},
		Alerts:  &pipeline.AlertOptions{Notify: true},
	}
	opts.NATS.Embedded = emb
	e.store = "no store (--no-store)"
	if !f.noStore {
		storeCfg := cfg.Store
		storeCfg.Path, storeCfg.DSN = filepath.Join(dir, "store"), ""
		st, closeStore, err := openStore(storeCfg)
		switch {
		case errors.Is(err, chdb.ErrNoLibrary):
			e.store = "no store (the embedded engine is not installed: make deps)"
		case err != nil:
			return nil, storeExit(storeCfg, err, " (give --no-store to run without it)")
		default:
			e.closeStore = closeStore
			e.store = "sink into the embedded store (temporary)"
			e.sink = sink.NewMetrics(prometheus.NewRegistry())
			opts.Sink = sinkOptions(cfg, st, e.sink)
		}
	}
	e.p, err = pipeline.New(ctx, opts)
	if err != nil {
		return nil, pipelineExit("ponens bench", err)
	}
	e.cfg = natsCfg
	e.cfg.URL = e.p.URL()
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.running = make(chan struct{})
	e.g.Go(func() error {
		defer close(e.running)
		return e.p.Run(runCtx)
	})
	if err := e.p.Settled(ctx, 30*time.Second, e.running); err != nil {
		return nil, fmt.Errorf("ponens bench: the embedded pipeline: %w", err)
	}
	return e, nil
}

// embeddedServer is the pipeline of `ponens serve`, in this process, on
// loopback.
type embeddedServer struct {
	p          *pipeline.Pipeline
	cfg        config.NATSConfig // how its clients connect
	store      string            // whether the sink runs, for the report
	sink       *sink.Metrics     // the sink's, when it runs
	closeStore func()
	cancel     context.CancelFunc
	running    chan struct{}
	g          errgroup.Group
	dir        string
	log        *slog.Logger
}

// stop stops the pipeline and the store, and removes the directory.
func (e *embeddedServer) stop() {
	if e.cancel != nil {
		e.cancel()
		if err := e.g.Wait(); err != nil {
			e.log.Warn("bench: pipeline", "err", err)
		}
	}
	if e.p != nil {
		e.p.Close()
	}
	e.closeStore()
	_ = os.RemoveAll(e.dir)
}

// measureProcess measures this process, which holds the embedded pipeline:
// its resident memory now and at its peak (VmRSS, VmHWM), its Go heap, and
// the rows the sink (sm, when the store runs) had committed; and writes a
// heap profile when memProfile is set.
func measureProcess(memProfile string, sm *sink.Metrics) func(*loadgen.Result) {
	return func(r *loadgen.Result) {
		if sm != nil {
			r.StoredEvents, r.StoredVerdicts = sm.Rows(sink.Events), sm.Rows(sink.Verdicts)
		}
		status := procStatus()
		r.RSSBytes, r.PeakRSSBytes = status["VmRSS"], status["VmHWM"]
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.HeapBytes = int64(ms.HeapInuse)
		if memProfile != "" {
			if pf, err := os.Create(memProfile); err == nil {
				_ = pprof.WriteHeapProfile(pf)
				pf.Close()
			}
		}
	}
}

// procStatus reads the kB fields of /proc/self/status, in bytes.
func procStatus() map[string]int64 {
	out := map[string]int64{}
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return out
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			out[name] = kb << 10
		}
	}
	return out
}

// printBench writes the human report of a load.
func printBench(out io.Writer, r loadgen.Result, remote bool, workers int) {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(out, "events    %d stored and processed (verdicts stored, acked by the workers) in %.2fs: %.0f events/s\n",
		r.Events, r.Seconds, r.EventsPerSec)
	fmt.Fprintf(out, "publish   %d events in %.2fs (%.0f/s), held back %s for the backlog (largest seen %d)\n",
		r.Published, r.PublishSeconds, float64(r.Published)/max(r.PublishSeconds, 1e-9), r.HeldBack.Round(time.Millisecond), r.MaxBacklogSeen)
	lat := func(name string, l loadgen.Latency, note string) {
		if l.Samples == 0 {
			fmt.Fprintf(out, "%-9s no samples%s\n", name, note)
			return
		}
		fmt.Fprintf(out, "%-9s p50 %.1f ms  p99 %.1f ms  max %.1f ms  (%d samples)%s\n", name, l.P50, l.P99, l.Max, l.Samples, note)
	}
	lat("verdict", r.Verdict, "")
	note := fmt.Sprintf("; %d mistakes made, %d violated verdicts", r.Mistakes, r.Violated)
	if !r.AlertStage {
		note += "; no alert stage found"
	}
	lat("alert", r.Alert, note)
	if r.Webhook.Samples > 0 {
		lat("webhook", r.Webhook, " (a loopback webhook subscribed to every violation)")
	}
	if r.Dropped > 0 || r.Missed > 0 {
		fmt.Fprintf(out, "lost      %d verdicts/alerts dropped by the listener (slow consumer), %d without a publish time\n", r.Dropped, r.Missed)
	}
	fmt.Fprintf(out, "open runs %d of %d (the workers' checkpoints at the measuring point)\n", r.OpenRuns, r.Runs)
	switch {
	case r.StoredEvents > 0:
		fmt.Fprintf(out, "store     %s: %d events (%d behind) and %d verdicts stored at the measuring point\n",
			r.Store, r.StoredEvents, int64(r.Events)-int64(r.StoredEvents), r.StoredVerdicts)
	case r.Store != "":
		fmt.Fprintf(out, "store     %s\n", r.Store)
	}
	if remote {
		fmt.Fprintln(out, "rss       not measured: the server runs in another process (rss_bytes is 0); read its VmRSS there")
	} else {
		fmt.Fprintf(out, "rss       %s (VmRSS of this process: embedded NATS server, %d workers, alert stage, the store when it ran, and the load generator; peak %s, Go heap in use %s, publish-time bookkeeping %s)\n",
			mib(r.RSSBytes), workers, mib(r.PeakRSSBytes), mib(r.HeapBytes), mib(r.RecorderBytes))
	}
	if r.CPUSeconds > 0 && r.Events > 0 {
		fmt.Fprintf(out, "cpu       %.1f CPU-s from the first publish to the measuring point: %.1f µs per event, %.2f cores (this process: pipeline and load generator)\n",
			r.CPUSeconds, r.CPUSeconds*1e6/float64(r.Events), r.CPUSeconds/max(r.Seconds, 1e-9))
	}
	if r.Finished > 0 {
		fmt.Fprintf(out, "closed    %d runs with run.finish after the measurement\n", r.Finished)
	}
}

// writeSamples writes latency samples as CSV: kind, seconds since the
// first publish, latency in milliseconds.
func writeSamples(file string, samples []loadgen.Sample) error {
	fh, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(fh)
	fmt.Fprintln(w, "kind,published_s,latency_ms")
	for _, s := range samples {
		kind := "verdict"
		if s.Alert {
			kind = "alert"
		}
		fmt.Fprintf(w, "%s,%.6f,%.3f\n", kind, s.Published.Seconds(), float64(s.Latency)/1e6)
	}
	if err := w.Flush(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
