package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/query/api"
)

func init() { subcommands = append(subcommands, newRunsCommand, newRunCommand, newRulesCommand) }

// apiFlags are the flags of the commands that read the query service.
type apiFlags struct {
	server, token, output string
}

func (f *apiFlags) register(cmd *cobra.Command) {
	f.registerService(cmd)
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "`FORMAT`: table, json or csv")
}

// registerService registers the flags naming the service: --server and
// --token.
func (f *apiFlags) registerService(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "the query service's `URL` (default http:// and query.listen)")
	cmd.Flags().StringVar(&f.token, "token", "", "the bearer `TOKEN` the service requires when query.tokens is set (prefer PONENS_QUERY_TOKEN, which other users cannot read in the process list)")
}

// apiClient reads the query service's JSON envelopes.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// client is the client of the flags: --server, else query.listen (a
// wildcard host read as this host).
func (f *apiFlags) client(cmd *cobra.Command) (*apiClient, error) {
	if f.output != "table" && f.output != "json" && f.output != "csv" {
		return nil, exitWith(exitBadInput, "--output %q: expected table, json or csv", f.output)
	}
	return f.serviceClient(cmd)
}

// serviceClient is client without an --output to check.
func (f *apiFlags) serviceClient(cmd *cobra.Command) (*apiClient, error) {
	cfg, err := loadConfig(cmd, nil)
	if err != nil {
		return nil, err
	}
	base := f.server
	if base == "" {
		host, port, err := net.SplitHostPort(cfg.Query.Listen)
		if err != nil {
			return nil, exitWith(exitBadInput, "query.listen %q: %v", cfg.Query.Listen, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		base = "http://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, exitWith(exitBadInput, "--server %q: expected an http:// or https:// URL", base)
	}
	token := f.token
	if token == "" {
		token = os.Getenv("PONENS_QUERY_TOKEN")
	}
	return &apiClient{base: strings.TrimSuffix(base, "/"), token: token, http: &http.Client{Timeout: time.Minute}}, nil
}

// get GETs path with q and decodes the data of its success envelope into
// out. An error answer is exit 2 (bad_data, not_found, unauthorized,
// forbidden) or 3 (the service or its store unavailable).
func (c *apiClient) get(ctx context.Context, path string, q url.Values, out any) error {
	_, err := c.getWarned(ctx, path, q, out)
	return err
}

// getWarned is get that also returns the warnings of the envelope.
func (c *apiClient) getWarned(ctx context.Context, path string, q url.Values, out any) ([]string, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, exitWith(exitBadInput, "%v", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, exitWith(exitUnavailable, "the query service at %s did not answer: %v", c.base, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, exitWith(exitUnavailable, "reading the answer of %s: %v", u, err)
	}
	var env struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType api.ErrorType   `json:"errorType"`
		Error     string          `json:"error"`
		Warnings  []string        `json:"warnings"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, exitWith(exitUnavailable, "%s answered %s, not the query service's JSON", u, resp.Status)
	}
	if env.Status != "success" {
		code := exitBadInput
		if env.ErrorType == api.ErrUnavailable || env.ErrorType == api.ErrTimeout || env.ErrorType == api.ErrInternal {
			code = exitUnavailable
		}
		hint := ""
		switch {
		case env.ErrorType == api.ErrUnauthorized && c.token == "":
			hint = " (give the token in PONENS_QUERY_TOKEN or --token)"
		}
		return nil, exitWith(code, "%s: %s%s", env.ErrorType, env.Error, hint)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return nil, exitWith(exitUnavailable, "%s: the answer's data: %v", u, err)
	}
	return env.Warnings, nil
}

// table is rows of cells under a header, written as the output flag asks:
// aligned columns, CSV, or (json) v as JSON.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write writes t (json: v) to w in format: an empty cell is "-" in an
// aligned table, so that the columns stay apart, and empty in CSV.
func (t *table) write(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write(t.header)
		_ = cw.WriteAll(t.rows)
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = dash(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// dash is s, or "-" when empty (a table cell).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newRunsCommand() *cobra.Command {
	var f apiFlags
	var rules []string
	var status, since, until, agent, project, cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "runs [--rule R]... [--status S] [--since D] [--until T] [--agent A] [--project P] [--limit N] [--server URL] [--token T] [--output table|json|csv]",
		Short: "List the fleet's runs from the query service, newest first",
		Long: `runs lists the runs the query service holds, newest first, with their
agent, project, start, outcome, event count, worst status and violated
rules. --status picks runs by their worst status over the rules (over
--rule's rules when given); --since and --until take an RFC 3339 time or a
duration back from now (1h, 7d). One page of --limit runs; when there are
more, the cursor of the next page is printed on stderr (--cursor).`,
		Example: `  ponens runs --status violated --since 1h
  ponens runs --rule tests_before_commit --agent coder-1 --output csv
  ponens runs --server http://query.internal:8090 --token "$TOKEN" --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client(cmd)
			if err != nil {
				return err
			}
			q := url.Values{"rule": rules, "limit": {strconv.Itoa(limit)}}
			for k, v := range map[string]string{"status": status, "since": since, "until": until, "agent": agent, "project": project, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			var page api.RunPage
			if err := c.get(cmd.Context(), "/v1/runs", q, &page); err != nil {
				return err
			}
			t := &table{header: []string{"RUN", "AGENT", "PROJECT", "STARTED", "OUTCOME", "EVENTS", "STATUS", "VIOLATED"}}
			for _, r := range page.Runs {
				t.add(r.RunID, r.Agent, r.Project, r.StartedAt, r.Outcome, strconv.FormatUint(r.Events, 10), string(r.Status), strings.Join(r.Violated, " "))
			}
			if page.NextCursor != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "more runs: --cursor %s\n", page.NextCursor)
			}
			return t.write(cmd.OutOrStdout(), f.output, page)
		},
	}
	f.register(cmd)
	cmd.Flags().StringArrayVar(&rules, "rule", nil, "a rule id (repeatable)")
	cmd.Flags().StringVar(&status, "status", "", "the run's worst status: violated, unresolved, pending or satisfied")
	cmd.Flags().StringVar(&since, "since", "", "runs started since `TIME` (RFC 3339, or a duration back from now: 1h)")
	cmd.Flags().StringVar(&until, "until", "", "runs started before `TIME`")
	cmd.Flags().StringVar(&agent, "agent", "", "the runs of `AGENT`")
	cmd.Flags().StringVar(&project, "project", "", "the runs of `PROJECT`")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the `CURSOR` of the next page")
	cmd.Flags().IntVar(&limit, "limit", 100, "runs per page (1 to 10000)")
	return cmd
}

// runView is what `ponens run --output json` prints.
type runView struct {
	Run      api.RunDetail `json:"detail"`
	Timeline api.Timeline  `json:"timeline"`
}

func newRunCommand() *cobra.Command {
	var f apiFlags
	cmd := &cobra.Command{
		Use:   "run ID [--server URL] [--token T] [--output table|json|csv]",
		Short: "Show a run from the query service: its rules' statuses and its timeline",
		Long: `run shows one run: its agent, project, times, outcome and worst status,
each rule's current status (and the event of its last transition), and
its timeline, each event with the verdict transitions it caused. --output
json prints {"detail": …, "timeline": …} as the service answers them; csv
prints the timeline, one event a row, its verdicts as rule=status.`,
		Example: `  ponens run demo-1-mx7cn2of-agent-000-run-0001
  ponens run demo-1-mx7cn2of-agent-000-run-0001 --output json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[0]) == "" {
				return exitWith(exitBadInput, "no run id given (ponens runs lists them)")
			}
			c, err := f.client(cmd)
			if err != nil {
				return err
			}
			var v runView
			path := "/v1/runs/" + url.PathEscape(args[0])
			if err := c.get(cmd.Context(), path, nil, &v.Run); err != nil {
				return err
			}
			if err := c.get(cmd.Context(), path+"/timeline", nil, &v.Timeline); err != nil {
				return err
			}
			return writeRun(cmd.OutOrStdout(), f.output, &v)
		},
	}
	f.register(cmd)
	return cmd
}

// writeRun writes a run: for a table, its header lines and rules before
// the timeline.
func writeRun(w io.Writer, format string, v *runView) error {
	verdicts := map[uint64][]string{}
	for _, vd := range v.Timeline.Verdicts {
		verdicts[vd.Seq] = append(verdicts[vd.Seq], vd.Rule.ID+"="+string(vd.Status))
	}
	events := &table{header: []string{"SEQ", "TS", "TYPE", "ACTION", "TARGET", "VERDICTS"}}
	for _, e := range v.Timeline.Events {
		events.add(strconv.FormatUint(e.Seq, 10), e.TS, e.Type, e.ActionType, e.Target, strings.Join(verdicts[e.Seq], " "))
	}
	if format != "table" {
		return events.write(w, format, v)
	}
	r := v.Run.Run
	ended := "-"
	if r.EndedAt != nil {
		ended = *r.EndedAt
	}
	fmt.Fprintf(w, "run      %s\nagent    %s\nproject  %s\nstarted  %s\nended    %s (%s)\nstatus   %s, %d events\n\n",
		r.RunID, dash(r.Agent), dash(r.Project), r.StartedAt, ended, dash(r.Outcome), r.Status, r.Events)
	rules := &table{header: []string{"RULE", "MODE", "STATUS", "AT SEQ"}}
	for _, s := range v.Run.Rules {
		at := "" // no verdict: held throughout
		if s.Seq > 0 {
			at = strconv.FormatUint(s.Seq, 10)
		}
		rules.add(s.RuleID, string(s.Mode), string(s.Status), at)
	}
	if err := rules.write(w, format, nil); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return events.write(w, format, nil)
}

func newRulesCommand() *cobra.Command {
	var f apiFlags
	var since, until string
	cmd := &cobra.Command{
		Use:   "rules [--since D] [--until T] [--server URL] [--token T] [--output table|json|csv]",
		Short: "Count each rule's runs by status, from the query service",
		Long: `rules lists every rule the query service knows (those it was started
with, then any other with a stored verdict) with how many of the runs
started in the window are violated, pending, unresolved and satisfied by
it; a run where the rule emitted no verdict counts as satisfied.`,
		Example: `  ponens rules --since 24h
  ponens rules --output csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client(cmd)
			if err != nil {
				return err
			}
			q := url.Values{}
			if since != "" {
				q.Set("since", since)
			}
			if until != "" {
				q.Set("until", until)
			}
			var data struct {
				Rules []api.RuleCounts `json:"rules"`
			}
			if err := c.get(cmd.Context(), "/v1/rules", q, &data); err != nil {
				return err
			}
			t := &table{header: []string{"RULE", "MODE", "RUNS", "VIOLATED", "PENDING", "UNRESOLVED", "SATISFIED"}}
			u := func(n uint64) string { return strconv.FormatUint(n, 10) }
			for _, r := range data.Rules {
				t.add(r.RuleID, string(r.Mode), u(r.Runs), u(r.Violated), u(r.Pending), u(r.Unresolved), u(r.Satisfied))
			}
			return t.write(cmd.OutOrStdout(), f.output, data)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&since, "since", "", "runs started since `TIME` (RFC 3339, or a duration back from now: 24h)")
	cmd.Flags().StringVar(&until, "until", "", "runs started before `TIME`")
	return cmd
}
