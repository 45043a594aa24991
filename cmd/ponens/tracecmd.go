package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/ingest/tracefile"
	"github.com/ponens/ponens/query/record"
)

func init() { subcommands = append(subcommands, newTraceCommand) }

// traceSubcommands lists the constructors of the `ponens trace …`
// subcommands; each one's file appends to it in an init function.
var traceSubcommands = []func() *cobra.Command{newTraceSymbolsCommand, newTraceSymbolCommand}

func newTraceCommand() *cobra.Command {
	cmd := groupCommand("trace", "Ask a trace what it established: the record query (symbols, symbol)")
	cmd.Example = `  ponens trace symbols examples/record/payments.json
  ponens trace symbol examples/record/payments.json step`
	for _, add := range traceSubcommands {
		cmd.AddCommand(add())
	}
	return cmd
}

func newTraceSymbolsCommand() *cobra.Command {
	var cwd, reqFile string
	var asJSON bool
	var svc traceService
	cmd := &cobra.Command{
		Use:   "symbols (TRACE | --run ID [--server URL] [--token TOKEN]) [--cwd DIR] [--file REQUIREMENTS] [--json]",
		Short: "The index of the record: one line per symbol the trace established something about",
		Long: `List every (symbol, file) the trace's record knows anything about: the kind
and grade of its latest standing entry, its freshness, its region count,
its open gaps, its ref and when it was established. Enough to decide whether
to ask a second question (ponens trace symbol), never enough to answer one.

Freshness is fresh, out_of_date (the trace edits the file later, or the file
under --cwd hashes otherwise than recorded) or unknown (no hash recorded).
Without --cwd only the trace is consulted. --file names a requirements file
(YAML: requirements: [{id, symbols: [NAME or {symbol, file}]}]) and fills in
the requirement each symbol serves.

TRACE is a reference trace (JSON) or an event stream (JSONL); a directory
stands for every trace file under it, read in order as one record.
--run ID asks the query service (--server, default query.listen; --token)
about a run it stored instead: the same answer, freshness from the trace
alone (--cwd is refused; --file is read here). Text output marks each
line: a space for fresh, M for out_of_date, ? for unknown. Exit 0, or 2
for a trace that cannot be read or whose trace spec version the record
query does not read, or an unknown run; 3 when the service does not
answer.`,
		Example: `  ponens trace symbols examples/record/payments.json
  ponens trace symbols --cwd examples/record/checkout --file examples/record/requirements.yaml --json examples/record/payments.json
  ponens trace symbols --server http://127.0.0.1:8090 --run tr-payments`,
		RunE: func(cmd *cobra.Command, args []string) error {
			idx, err := symbolsIndex(cmd, args, cwd, reqFile, &svc)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), idx)
			}
			printIndex(cmd.OutOrStdout(), idx)
			return nil
		},
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "compare each entry with the files in this checkout `DIR` (paths in the trace are relative to it)")
	cmd.Flags().StringVar(&reqFile, "file", "", "a requirements file (YAML or JSON) naming the requirement each symbol serves: `REQUIREMENTS`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object: symbols and summary counts")
	svc.register(cmd)
	return cmd
}

// symbolsIndex is the index `ponens trace symbols` prints: of the trace
// args[0], or of the stored run svc names; reqFile, when given, names the
// requirement of each row.
func symbolsIndex(cmd *cobra.Command, args []string, cwd, reqFile string, svc *traceService) (record.Index, error) {
	var rec *record.Record
	var checkout *record.Checkout
	var err error
	if !svc.active(cmd) {
		if rec, checkout, err = loadRecord(cmd, args, 1, cwd); err != nil {
			return record.Index{}, err
		}
	}
	var reqs *record.Requirements
	if reqFile != "" {
		if reqs, err = record.ReadRequirements(reqFile); err != nil {
			return record.Index{}, exitWith(exitBadInput, "--file: %v", err)
		}
	}
	if rec == nil {
		return svc.index(cmd, args, cwd, reqs)
	}
	return rec.Index(checkout, reqs), nil
}

func newTraceSymbolCommand() *cobra.Command {
	var cwd string
	var asJSON bool
	var qn symbolQuestion
	var svc traceService
	cmd := &cobra.Command{
		Use:   "symbol (TRACE | --run ID [--server URL] [--token TOKEN]) SYMBOL [--file PATH] [--regions] [--where EXPR] [--limit N] [--cwd DIR] [--json]",
		Short: "What the record establishes about one symbol, and whether it still holds",
		Long: `Answer what the trace's record establishes about SYMBOL: its freshness
(with the file@hash it was derived from), the evidence that stands (kind,
grade, ref; regions of a decomposition; reference, outcome and counts of a
conformance check), its shape (the variables its behaviour splits on, its
outcomes), its open gaps, and the assumptions and scope its regions hold
under. A symbol the record does not know is an answer, not an error:
{"symbol": …, "known": false}, exit 0: read the source.

--regions returns the region map instead: each region's constraints,
invariant and witness, whether the map is complete or bounded, how many
regions match (total) and how many are given (returned; at most --limit,
20 unless said, 0 for all). --where narrows it, and implies --regions:
  TEXT           regions whose constraints or invariant contain TEXT
  outcome:LABEL  regions producing that outcome
  diverged       regions where a conformance check disagreed
  raised         regions where the code raised before returning
When the record cannot say which regions diverged or raised, the answer
says so ("unknown") instead of returning none.

--file names the file when the symbol is recorded in several (else exit 2).
--run ID asks the query service (--server, default query.listen; --token)
about a run it stored instead of reading a TRACE: the same answer,
freshness from the trace alone (--cwd is refused). Exit 0, or 2 for bad
usage, a trace that cannot be read or an unknown run; 3 when the service
does not answer.`,
		Example: `  ponens trace symbol examples/record/payments.json step
  ponens trace symbol --json --cwd examples/record/checkout examples/record/payments.json refund
  ponens trace symbol --where 'a.c = Cancel' examples/record/payments.json step
  ponens trace symbol --regions --where diverged --json examples/record/payments.json step
  ponens trace symbol --server http://127.0.0.1:8090 --run tr-payments --where raised step`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var answer any
			var err error
			if svc.active(cmd) {
				answer, err = svc.symbol(cmd, args, cwd, &qn)
			} else {
				answer, err = qn.local(cmd, args, cwd)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), answer)
			}
			printAnswer(cmd.OutOrStdout(), answer)
			return nil
		},
	}
	cmd.Flags().StringVar(&qn.file, "file", "", "the file the symbol is in, when the record has it in several: `PATH`")
	cmd.Flags().BoolVar(&qn.regions, "regions", false, "return the region map of its decomposition")
	cmd.Flags().StringVar(&qn.where, "where", "", "narrow the regions: TEXT, outcome:LABEL, diverged or raised (implies --regions): `EXPR`")
	cmd.Flags().IntVar(&qn.limit, "limit", 20, "return at most N regions, 0 for all (implies --regions)")
	cmd.Flags().StringVar(&cwd, "cwd", "", "compare the entries with the files in this checkout `DIR` (paths in the trace are relative to it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object")
	svc.register(cmd)
	return cmd
}

// symbolQuestion is what `ponens trace symbol` asks of the record besides
// the symbol: its flags.
type symbolQuestion struct {
	file, where string
	regions     bool
	limit       int
	w           record.Where // where, parsed
}

// parse checks the flags: --where and --limit imply --regions.
func (qn *symbolQuestion) parse(cmd *cobra.Command) error {
	if qn.limit < 0 {
		return exitWith(exitBadInput, "--limit: expected 0 (all) or a positive count, got %d", qn.limit)
	}
	if cmd.Flags().Changed("where") {
		var err error
		if qn.w, err = record.ParseWhere(qn.where); err != nil {
			return exitWith(exitBadInput, "--where %q: %v", qn.where, err)
		}
		qn.regions = true
	}
	qn.regions = qn.regions || cmd.Flags().Changed("limit")
	return nil
}

// local answers the question from the trace args[0] about the symbol
// args[1], compared with the checkout cwd when given.
func (qn *symbolQuestion) local(cmd *cobra.Command, args []string, cwd string) (any, error) {
	rec, checkout, err := loadRecord(cmd, args, 2, cwd)
	if err != nil {
		return nil, err
	}
	if err := qn.parse(cmd); err != nil {
		return nil, err
	}
	var answer any
	if qn.regions {
		answer, err = rec.RegionsOf(args[1], qn.file, qn.w, qn.limit, checkout)
	} else {
		answer, err = rec.Detail(args[1], qn.file, checkout)
	}
	var amb *record.AmbiguousError
	if errors.As(err, &amb) {
		return nil, exitWith(exitBadInput, "%v with --file", err)
	}
	return answer, nil
}

// loadRecord reads the record of the trace args[0] (n arguments wanted)
// and the checkout --cwd names.
func loadRecord(cmd *cobra.Command, args []string, n int, cwd string) (*record.Record, *record.Checkout, error) {
	cfg, err := loadConfig(cmd, nil)
	if err != nil {
		return nil, nil, err
	}
	if len(args) != n {
		want := "one TRACE (or --run ID)"
		if n == 2 {
			want = "a TRACE and a SYMBOL (or --run ID and a SYMBOL)"
		}
		return nil, nil, exitWith(exitBadInput, "give %s (got %d arguments)", want, len(args))
	}
	var checkout *record.Checkout
	if cwd != "" {
		st, err := os.Stat(cwd)
		if err != nil {
			return nil, nil, exitWith(exitBadInput, "--cwd %s: %v", cwd, errors.Unwrap(err))
		}
		if !st.IsDir() {
			return nil, nil, exitWith(exitBadInput, "--cwd %s: not a directory", cwd)
		}
		checkout = record.NewCheckout(cwd)
	}
	files, err := traceFiles(args[:1], cmd.ErrOrStderr())
	if err != nil {
		return nil, nil, err
	}
	var runs []record.Run
	for _, f := range files {
		tf, err := tracefile.ReadFile(f, tracefile.Limits{MaxLine: cfg.Trace.MaxEventBytes, MaxFileBytes: cfg.Trace.MaxFileBytes, MaxReferenceBytes: cfg.Trace.MaxReferenceBytes})
		if err != nil {
			return nil, nil, exitWith(exitBadInput, "%v", err)
		}
		tf.Release()
		reference := tf.Reference
		for _, r := range tf.Runs {
			if err := record.CheckVersion(r); err != nil {
				return nil, nil, exitWith(exitBadInput, "%s: %v", f, err)
			}
			runs = append(runs, record.Run{Run: r, Reference: reference})
		}
	}
	rec, problems, err := record.Extract(runs)
	if err != nil {
		return nil, nil, exitWith(exitBadInput, "%v", err)
	}
	for _, p := range problems {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", cmd.CommandPath(), p)
	}
	return rec, checkout, nil
}

// writeJSON writes v as one line of JSON, without HTML escaping: the
// answer goes into a context window, where every byte counts.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// stateMarks mark a line by freshness, as git status --short marks files.
var stateMarks = map[string]string{record.Fresh: " ", record.OutOfDate: "M", record.Unknown: "?"}

// printIndex writes the index for people: one line per symbol, then the
// counts.
func printIndex(w io.Writer, idx record.Index) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range idx.Symbols {
		extra := []string{plural(r.Gaps, "gap")}
		if r.Regions != nil {
			extra = append([]string{plural(*r.Regions, "region")}, extra...)
		}
		if r.Requirement != nil {
			extra = append(extra, "for "+*r.Requirement)
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", stateMarks[r.Freshness], orDash(r.File), r.Symbol, r.Kind, r.Grade, r.Ref, strings.Join(extra, "  "))
	}
	tw.Flush()
	s := idx.Summary
	fmt.Fprintf(w, "%s: %d fresh, %d out of date (M), %d unknown (?)\n", plural(s.Symbols, "symbol"), s.Fresh, s.OutOfDate, s.Unknown)
}

// printAnswer writes a detail, regions or absence answer for people.
func printAnswer(w io.Writer, answer any) {
	switch a := answer.(type) {
	case record.Absence:
		fmt.Fprintf(w, "%s: not in the record%s: nothing is known about it; read the source\n", a.Symbol, inFile(a.File))
	case record.Detail:
		printDetail(w, a)
	case record.Regions:
		printRegions(w, a)
	}
}

func printDetail(w io.Writer, d record.Detail) {
	fmt.Fprintf(w, "%s  %s  %s\n", d.Symbol, orDash(d.File), freshText(d.Freshness))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range d.Evidence {
		what := e.Status
		switch {
		case e.Regions != nil:
			what = plural(*e.Regions, "region")
		case e.ConformanceEvidence != nil:
			c := e.ConformanceEvidence
			what = fmt.Sprintf("%s against %s: %s total, %s diverged, %s raised", orDash(c.Outcome), orDash(c.Reference), count(c.Total), count(c.Diverged), count(c.Raised))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Kind, e.Grade, e.Ref, e.Freshness, what)
	}
	tw.Flush()
	if s := d.Shape; s != nil {
		fmt.Fprintf(w, "splits on  %s\n", strings.Join(s.SplitsOn, ", "))
		fmt.Fprintf(w, "outcomes   %d: %s\n", s.Outcomes, strings.Join(s.OutcomeLabels, ", "))
	}
	for _, g := range d.Gaps {
		fmt.Fprintf(w, "gap        %s  %s  %s  %s\n", g.ID, g.State, g.Severity, g.Statement)
	}
	for _, a := range d.Assumptions {
		fmt.Fprintf(w, "assumes    %s\n", a)
	}
	if d.Scope != nil {
		fmt.Fprintf(w, "scope      %s\n", *d.Scope)
	}
}

func printRegions(w io.Writer, r record.Regions) {
	head := []string{r.Symbol, orDash(r.File)}
	if r.Ref != nil {
		head = append(head, *r.Ref)
	}
	if r.Freshness != nil {
		head = append(head, freshText(*r.Freshness))
	}
	switch {
	case r.Complete != nil && *r.Complete:
		head = append(head, "complete")
	case r.Bound != nil:
		head = append(head, fmt.Sprintf("complete to depth %d only", *r.Bound))
	case r.Complete != nil:
		head = append(head, "not complete")
	}
	fmt.Fprintln(w, strings.Join(head, "  "))
	if r.Scope != nil {
		fmt.Fprintf(w, "scope  %s\n", *r.Scope)
	}
	for _, a := range r.Assumptions {
		fmt.Fprintf(w, "assumes  %s\n", a)
	}
	if r.Unknown != "" {
		fmt.Fprintf(w, "unknown: %s\n", r.Unknown)
	}
	where := ""
	if r.Where != nil {
		where = fmt.Sprintf(" matching %q", *r.Where)
	}
	fmt.Fprintf(w, "%d of %d regions%s\n", r.Returned, r.Total, where)
	for _, reg := range r.Regions {
		fmt.Fprintf(w, "  %s  %s  =>  %s\n", reg.ID, strings.Join(reg.Constraints, "; "), reg.Invariant)
		if reg.Witness != nil {
			fmt.Fprintf(w, "      witness %s -> %s\n", reg.Witness.Input, orNull(reg.Witness.Output))
		}
	}
	if r.Returned < r.Total {
		fmt.Fprintf(w, "%d more: --limit 0 returns all\n", r.Total-r.Returned)
	}
}

func freshText(f record.Freshness) string {
	s := f.State
	if f.Since != "" {
		s += ": " + f.Since
	}
	if f.DerivedFrom != nil {
		s += "  (derived from " + *f.DerivedFrom + ")"
	}
	return s
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func orNull(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	return string(raw)
}

func count(n *int) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

func inFile(f *string) string {
	if f == nil {
		return ""
	}
	return " in " + *f
}
