package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ponens/ponens/query/record"
)

// traceService is where `ponens trace` asks about a stored run instead
// of reading a trace file: the query service (--server, --token, as the
// other commands that read it) and the run (--run).
type traceService struct {
	api apiFlags
	run string
}

func (s *traceService) register(cmd *cobra.Command) {
	s.api.registerService(cmd)
	cmd.Flags().StringVar(&s.run, "run", "", "ask the query service about the stored run `ID` instead of reading a TRACE")
}

// active reports whether the command asks the service: --run, --server
// or --token is given.
func (s *traceService) active(cmd *cobra.Command) bool {
	return s.run != "" || cmd.Flags().Changed("run") || cmd.Flags().Changed("server") || cmd.Flags().Changed("token")
}

// client checks the arguments of a question to the service (n of them
// besides the TRACE it replaces) and returns the service's client and the
// path of the run's record. --cwd is refused: the answers do not carry
// what each entry was derived from, so a checkout here cannot be compared.
func (s *traceService) client(cmd *cobra.Command, args []string, n int, cwd string) (*apiClient, string, error) {
	switch {
	case s.run == "":
		return nil, "", exitWith(exitBadInput, "--server and --token ask the query service about a stored run: give --run ID (or a TRACE, without them)")
	case len(args) != n:
		want := "no argument (--run names the run)"
		if n == 1 {
			want = "one SYMBOL (--run names the run)"
		}
		return nil, "", exitWith(exitBadInput, "with --run give %s, got %d arguments", want, len(args))
	case cwd != "":
		return nil, "", exitWith(exitBadInput, "--cwd cannot be compared over the query service (its answers do not name the file@hash of each entry), and the service has no checkout: with --run, freshness rests on the trace alone; drop --cwd, or give the trace file instead of --run")
	}
	c, err := s.api.serviceClient(cmd)
	if err != nil {
		return nil, "", err
	}
	return c, "/v1/runs/" + url.PathEscape(s.run) + "/record/symbols", nil
}

// ask GETs path of the service into out and prints the warnings it
// answers as reading the trace here prints them.
func (s *traceService) ask(cmd *cobra.Command, c *apiClient, path string, q url.Values, out any) error {
	warnings, err := c.getWarned(cmd.Context(), path, q, out)
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", cmd.CommandPath(), w)
	}
	return err
}

// index asks the service for the index of the run's record; reqs, when
// not nil, names the requirement of each row, as it does over a trace.
func (s *traceService) index(cmd *cobra.Command, args []string, cwd string, reqs *record.Requirements) (record.Index, error) {
	var idx record.Index
	c, path, err := s.client(cmd, args, 0, cwd)
	if err != nil {
		return idx, err
	}
	if err := s.ask(cmd, c, path, nil, &idx); err != nil {
		return idx, err
	}
	if reqs != nil {
		for i, r := range idx.Symbols {
			file := ""
			if r.File != nil {
				file = *r.File
			}
			if req := reqs.For(r.Symbol, file); req != "" {
				idx.Symbols[i].Requirement = &req
			}
		}
	}
	return idx, nil
}

// symbol asks the service what the run's record establishes about the
// symbol args[0]: a record.Absence, record.Detail or record.Regions, as
// the record answers over a trace.
func (s *traceService) symbol(cmd *cobra.Command, args []string, cwd string, qn *symbolQuestion) (any, error) {
	c, path, err := s.client(cmd, args, 1, cwd)
	if err != nil {
		return nil, err
	}
	if err := qn.parse(cmd); err != nil {
		return nil, err
	}
	q := url.Values{}
	if qn.file != "" {
		q.Set("file", qn.file)
	}
	if qn.regions {
		q.Set("regions", "true")
		q.Set("limit", strconv.Itoa(qn.limit))
		if qn.w.Form != record.WhereAll {
			q.Set("where", qn.w.String())
		}
	}
	var data json.RawMessage
	if err := s.ask(cmd, c, path+"/"+url.PathEscape(args[0]), q, &data); err != nil {
		return nil, err
	}
	var known struct {
		Known bool `json:"known"`
	}
	var answer any
	err = json.Unmarshal(data, &known)
	switch {
	case err != nil:
	case !known.Known:
		answer, err = decodeAs[record.Absence](data)
	case qn.regions:
		answer, err = decodeAs[record.Regions](data)
	default:
		answer, err = decodeAs[record.Detail](data)
	}
	if err != nil {
		return nil, exitWith(exitUnavailable, "%s: the answer's data: %v", c.base+path, err)
	}
	return answer, nil
}

// decodeAs decodes data as a T.
func decodeAs[T any](data []byte) (any, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}
