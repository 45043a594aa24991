package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/monitor/worker"
	"github.com/ponens/ponens/transport"
)

func init() { subcommands = append(subcommands, newManifestCommand) }

func newManifestCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "manifest [--url URL] [--json]",
		Short: "Print the fleet's rule manifest: every rule the workers have had in force, each meaning a version",
		Long: `Print the rule manifest the monitor workers keep in the <prefix>_rules
key-value bucket: for every rule id ever in force, each meaning it has had
(version, the rule id its verdicts carry, the printed text, the mode, since
when). A rule whose meaning changes gets a new version whose verdicts carry
"<id>@<version>". Connects to nats.url (--url), or to a running ` + "`ponens serve`" + `
at nats.listen.`,
		Example: `  ponens manifest
  ponens manifest --url nats://127.0.0.1:4222 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, natsFlags)
			if err != nil {
				return err
			}
			ctx, stop := commandContext(cmd)
			defer stop()
			nc, js, err := openStreams(ctx, cfg.NATS, transport.RoleSink, "ponens manifest")
			if err != nil {
				return err
			}
			defer nc.Close()
			hist, err := worker.Manifest(ctx, js, cfg.NATS.Prefix)
			if err != nil {
				return exitWith(exitUnavailable, "ponens manifest: %v (has a worker run with this prefix?)", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(hist)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tVERSION\tVERDICTS AS\tMODE\tSINCE\tREMOVED\tTEXT")
			for _, h := range hist {
				for _, v := range h.Versions {
					removed := "-"
					if v.Removed != nil {
						removed = v.Removed.Format(time.DateTime + "Z")
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", h.ID, v.Version, v.VerdictID, v.Mode, v.Since.Format(time.DateTime+"Z"), removed, v.Text)
				}
			}
			return tw.Flush()
		},
	}
	registerNATS(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the manifest as JSON")
	return cmd
}
