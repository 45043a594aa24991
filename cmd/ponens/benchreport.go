package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/internal/benchreport"
)

func newBenchReportCommand() *cobra.Command {
	var (
		o   benchreport.Options
		out string
	)
	cmd := &cobra.Command{
		Use:   "report [--repo DIR] [--nats-server PATH] [--duration DURATION] [--out FILE]",
		Short: "Measure every figure of the performance table and print it as Markdown",
		Long: `Measure, one after the other, what the performance table states and print
it as a Markdown section with the machine (CPU model, cores, memory, Go)
and the command line, ready for docs/performance.md:

  evaluator, one core   events per second through a monitor, for each rule
                        class (20 pure temporal rules, scoped, structural,
                        the example rules), on random valid runs
  memory                heap per open run under the example rules
  offline check         ponens check on generated JSONL files (one long
                        run, and 10,000 interleaved runs): events per
                        second and peak resident memory
  pipeline              ponens bench as it runs by default: events per
                        second at full speed with the publish → verdict
                        latency, the publish → alert latency at 25,000
                        events/s offered, and resident memory with
                        100,000 open runs
  cluster               the same loads against three nats-server processes
                        clustered on loopback (every stream on three
                        replicas), ponens serve --url with one worker and
                        two ponens worker processes

It runs from a clone of the repository (--repo, default the current
directory): the rule classes are the files of monitor/testdata. The cluster
needs a nats-server binary (--nats-server, else nats-server on PATH); a
figure that cannot be measured says why. Takes about --duration × 5 plus
the offline checks; the machine should be otherwise idle.`,
		Example: `  ponens bench report --quick
  ponens bench report --duration 20s --nats-server ~/go/bin/nats-server --out report.md`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err != nil {
				return exitWith(exitBadInput, "ponens bench report: %v", err)
			}
			o.Binary = bin
			o.Progress = cmd.ErrOrStderr()
			o.Command = "ponens " + strings.Join(os.Args[1:], " ")
			if o.Quick && !cmd.Flags().Changed("events") {
				o.Events = 10_000
			}
			if o.Quick && !cmd.Flags().Changed("duration") {
				o.Duration = 2 * time.Second
			}
			if o.Duration <= 0 || o.Events <= 0 {
				return exitWith(exitBadInput, "ponens bench report: --duration and --events must be positive, got %s and %d", o.Duration, o.Events)
			}
			w := cmd.OutOrStdout()
			if out != "" { // before measuring: a path that cannot be written fails at once
				f, err := os.Create(out)
				if err != nil {
					return exitWith(exitBadInput, "ponens bench report: --out: %v", err)
				}
				defer f.Close()
				w = f
			}
			r, err := benchreport.Run(cmd.Context(), o)
			if err != nil {
				return exitWith(exitBadInput, "ponens bench report: %v", err)
			}
			if err := r.Markdown(w); err != nil {
				return exitWith(exitBadInput, "ponens bench report: %v", err)
			}
			if out != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Repo, "repo", ".", "a clone of the repository in `DIR` (the rule classes are its monitor/testdata files)")
	fl.StringVar(&o.NATSServer, "nats-server", "", "the nats-server binary at `PATH`, for the cluster figures (default: nats-server on $PATH)")
	fl.DurationVar(&o.Duration, "duration", 20*time.Second, "how long each load of the pipeline publishes")
	fl.IntVar(&o.Events, "events", 1_000_000, "events of each generated file the offline check reads")
	fl.BoolVar(&o.Quick, "quick", false, "small sizes and 2 s loads, to try the command (figures not comparable)")
	fl.StringVar(&out, "out", "", "write the Markdown to `FILE` instead of standard output")
	return cmd
}
