package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/claudecode"
	"github.com/ponens/ponens/ingest/otlp"
)

func init() { importSubcommands = append(importSubcommands, newImportOTLPCommand) }

func newImportOTLPCommand() *cobra.Command {
	var f importFlags
	var modelCalls string
	cmd := &cobra.Command{
		Use:   "otlp [--out FILE | --publish [--url URL]] [--explain] [--model-calls telemetry|action|skip] FILE",
		Short: "Import OpenTelemetry GenAI spans from an OTLP export",
		Long: `Read an OTLP trace export (an ExportTraceServiceRequest in OTLP/JSON, one
per line as the collector's file exporter writes them, or in protobuf;
gzip or not) and write the runs its GenAI spans describe: an invoke_agent
span opens a run (keyed by gen_ai.conversation.id, else the trace id; the
agent is gen_ai.agent.name or .id, else the resource's service.name) and
ends it when it is the root agent span; each execute_tool span is an
action (the tool gen_ai.tool.name through the mapping table, arguments and
result from gen_ai.tool.call.arguments and .result, failed when the span's
status is Error); model calls (chat, text_completion, generate_content,
embeddings) are telemetry, actions, or nothing (--model-calls, default
otlp.model_calls). Both gen_ai.provider.name and the older gen_ai.system
are read. Other spans are counted and skipped; spans that cannot be
evaluated (an execute_tool without a tool name) are rejected with the
reason on stderr.

The events go to stdout as JSON lines, to --out FILE, or with --publish to
the EVENTS stream. Exit 0 on success, 2 when the file cannot be read, 3
when --publish cannot reach NATS.`,
		Example: `  ponens import otlp examples/imports/otlp.json
  ponens import otlp --explain --model-calls action --out /dev/null examples/imports/otlp.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			cfg, err := loadConfig(cmd, map[string]string{"url": "nats.url", "model-calls": "otlp.model_calls"})
			if err != nil {
				return err
			}
			table, err := loadMapping(cfg.Mapping)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			var explain func(string, string)
			if f.explain {
				explain = func(where, what string) { fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s: %s\n", args[0], where, what) }
			}
			res, err := otlp.ImportFile(data, args[0], table, otlp.Options{ModelCalls: cfg.OTLP.ModelCalls}, explain)
			if err != nil {
				return exitWith(exitBadInput, "%v", err)
			}
			for _, rj := range res.Rejected {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: rejected %s\n", args[0], rj)
			}
			if f.explain || len(res.Skipped) > 0 || len(res.Rejected) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s; %s rejected; skipped %s\n", args[0], plural(len(res.Events), "event"), plural(len(res.Rejected), "span"), claudecode.SkippedString(res.Skipped))
			}
			return f.emit(cmd, cfg, res.Events)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&modelCalls, "model-calls", "", "what model call spans become: telemetry, action or skip (otlp.model_calls)")
	return cmd
}
