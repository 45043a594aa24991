package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/config"
	"github.com/ponens/ponens/ingest/mapping"
	"github.com/ponens/ponens/schema"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newImportCommand) }

// importSubcommands lists the constructors of the `ponens import …`
// subcommands; each one's file appends to it in an init function.
var importSubcommands []func() *cobra.Command

func newImportCommand() *cobra.Command {
	cmd := groupCommand("import", "Turn agent transcripts and traces of other tools into ponens trace events")
	cmd.Example = `  ponens import claude-code examples/imports/claude-code.jsonl
  ponens import claude-code --explain examples/imports/claude-code.jsonl`
	for _, add := range importSubcommands {
		cmd.AddCommand(add())
	}
	return cmd
}

// importFlags are the output flags every import shares.
type importFlags struct {
	out     string
	publish bool
	explain bool
}

func (f *importFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.out, "out", "", "write the events to this `FILE` (JSON lines) instead of stdout")
	cmd.Flags().BoolVar(&f.publish, "publish", false, "publish the events to the EVENTS stream instead of writing them")
	cmd.Flags().BoolVar(&f.explain, "explain", false, "say on stderr, for each input record, the events it became or why it became none")
	cmd.Flags().String("url", "", "with --publish: NATS server URL (nats.url; empty: the embedded server at nats.listen)")
}

// check refuses flags that do not fit together.
func (f *importFlags) check(cmd *cobra.Command) error {
	if f.publish && f.out != "" {
		return exitWith(exitBadInput, "--out and --publish: give one")
	}
	if cmd.Flags().Changed("url") && !f.publish {
		return exitWith(exitBadInput, "--url is where --publish sends the events: give --publish with it")
	}
	return nil
}

// explainer prints --explain lines on w, or nothing when off.
func (f *importFlags) explainer(w io.Writer, name string) func(int, string) {
	if !f.explain {
		return nil
	}
	return func(line int, what string) { fmt.Fprintf(w, "%s:%d: %s\n", name, line, what) }
}

// loadMapping is the mapping table the configuration asks for.
func loadMapping(c config.MappingConfig) (*mapping.Table, error) {
	if c.File == "" {
		return mapping.Default(), nil
	}
	data, err := os.ReadFile(c.File)
	if err != nil {
		return nil, exitWith(exitBadInput, "mapping.file: %v", err)
	}
	t, err := mapping.Load(data, c.File)
	if err != nil {
		return nil, exitWith(exitBadInput, "%v", err)
	}
	return t, nil
}

// emit writes the events as JSON lines (stdout or --out), or publishes
// them, after checking each against the envelope.
func (f *importFlags) emit(cmd *cobra.Command, cfg config.Config, events []schema.Event) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return exitWith(exitBadInput, "event seq %d of run %s: %v", events[i].Seq, events[i].RunID, err)
		}
	}
	if f.publish {
		return publishEvents(cmd, cfg, events)
	}
	var buf bytes.Buffer
	if err := writeJSONLines(&buf, events); err != nil {
		return err
	}
	if f.out == "" {
		_, err := cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(f.out, buf.Bytes(), 0o644); err != nil {
		return exitWith(exitBadInput, "--out: %v", err)
	}
	return nil
}

// publishEvents sends events to the EVENTS stream and waits until each is
// stored.
func publishEvents(cmd *cobra.Command, cfg config.Config, events []schema.Event) error {
	ctx, stop := commandContext(cmd)
	defer stop()
	nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleAgent, cmd.CommandPath())
	if err != nil {
		return err
	}
	defer nc.Close()
	pub := transport.NewPublisher(js, streamConfig(cfg.NATS).Subjects(), transport.PublisherOptions{})
	for i := range events {
		if err := pub.Publish(ctx, &events[i]); err != nil {
			pub.Close()
			return exitWith(exitUnavailable, "%v", err)
		}
	}
	if err := pub.Close(); err != nil {
		return exitWith(exitUnavailable, "%v", err)
	}
	st := pub.Stats()
	fmt.Fprintf(cmd.ErrOrStderr(), "published %d events to %s: %d stored, %d already stored\n", len(events), natsURL(cfg.NATS), st.Stored, st.Duplicates)
	return nil
}
