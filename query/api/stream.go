package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ponens/ponens/query/alert"
	"github.com/ponens/ponens/schema"
)

// LiveVerdict is a verdict transition as it is published, with what its
// message's headers say of its run and rule.
type LiveVerdict struct {
	// Data is the verdict's JSON, as the verdict stream holds it.
	Data []byte
	// Agent and Project are the run's; Severity the rule's declared one.
	Agent, Project, Severity string
}

// Live follows the verdicts as the workers publish them: Follow calls fn
// with each one until ctx ends, and returns when it does (or at once with
// an error when it cannot follow); it calls ready once what is published
// from then on reaches fn. fn may be called from another
// goroutine and must not block for long.
type Live interface {
	Follow(ctx context.Context, fn func(LiveVerdict), ready func()) error
}

// AlertFeed follows the alerts of a stream subscription as the alert stage
// sends them: FollowAlerts calls fn with each alert's JSON until ctx ends.
// A Live that is one too gives the service GET
// /v1/subscriptions/{id}/stream.
type AlertFeed interface {
	FollowAlerts(ctx context.Context, id string, fn func([]byte), ready func()) error
}

// alertStream answers GET /v1/subscriptions/{id}/stream: the alerts of the
// stream subscription id, as server-sent events named "alert", after its
// grouping, silences and rate limit.
func (s *Server) alertStream(feed AlertFeed) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := pathValues(r, "id"); err != nil {
			writeError(w, err)
			return
		}
		id := r.PathValue("id")
		subs, err := s.opts.Alerts.Subscriptions(r.Context())
		if err != nil {
			writeError(w, alertsError(err))
			return
		}
		i := slices.IndexFunc(subs, func(st alert.SubscriptionState) bool { return st.ID == id })
		switch {
		case i < 0:
			writeError(w, notFound("no subscription %s", safe(id)))
			return
		case !subs[i].Stream:
			writeError(w, &Error{Type: ErrBadData, Msg: fmt.Sprintf("subscription %s sends its alerts elsewhere: only a subscription with \"stream\": true streams here", safe(id))})
			return
		}
		s.serveEvents(w, r, "ponens alerts of subscription "+id, "alert", func(ctx context.Context, push func([]byte), ready func()) error {
			return feed.FollowAlerts(ctx, id, push, ready)
		})
	}
}

// streamParams are the filters of /v1/stream.
var streamParams = []string{"status", "rule", "agent", "project", "run"}

// streamFilter is what /v1/stream sends: every filter given must match.
type streamFilter struct {
	statuses       []schema.VerdictStatus
	rule           string // a glob
	agent, project string
	run            string
}

func (f streamFilter) match(v *schema.VerdictEvent, lv LiveVerdict) bool {
	if len(f.statuses) > 0 && !slices.Contains(f.statuses, v.Status) {
		return false
	}
	if f.rule != "" {
		if ok, _ := path.Match(f.rule, v.Rule.ID); !ok {
			return false
		}
	}
	return (f.agent == "" || f.agent == lv.Agent) && (f.project == "" || f.project == lv.Project) && (f.run == "" || f.run == v.RunID)
}

// streamQuery reads the filters of a /v1/stream request.
func streamQuery(q *query) (streamFilter, error) {
	f := streamFilter{rule: q.str("rule"), agent: q.str("agent"), project: q.str("project"), run: q.str("run")}
	for _, s := range q.list("status") {
		if !slices.Contains(schema.Statuses, schema.VerdictStatus(s)) {
			return f, badData("status", "want satisfied, violated, pending or unresolved, got %q", s)
		}
		f.statuses = append(f.statuses, schema.VerdictStatus(s))
	}
	if f.rule != "" {
		if _, err := path.Match(f.rule, ""); err != nil {
			return f, badData("rule", "not a glob: %v", err)
		}
	}
	return f, nil
}

// withRoute is the verdict JSON data with the agent, project and
// severity of lv added as members, when known.
func withRoute(data []byte, lv LiveVerdict) []byte {
	data = bytes.TrimSuffix(bytes.TrimSpace(data), []byte("}"))
	out := append([]byte(nil), data...)
	for _, m := range []struct{ k, v string }{{"agent", lv.Agent}, {"project", lv.Project}, {"severity", lv.Severity}} {
		if m.v != "" {
			v, _ := json.Marshal(m.v)
			out = append(append(out, `,"`+m.k+`":`...), v...)
		}
	}
	return append(out, '}')
}

// streamKeepAlive is how often an idle stream sends a comment, so that
// proxies keep the connection and a dead client is noticed.
const streamKeepAlive = 15 * time.Second

// stream serves /v1/stream: the verdict transitions published from now
// on that match the filters, as server-sent events ("event: verdict",
// the verdict's JSON as data, with its agent, project and severity when
// known), until the client goes away. A client too slow to read loses
// the oldest events, and is told how many with an "event: dropped".
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	q, err := newQuery(r.URL.Query(), s.opts.Now(), streamParams...)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := streamQuery(q)
	if err != nil {
		writeError(w, err)
		return
	}
	s.serveEvents(w, r, "ponens verdicts", "verdict", func(ctx context.Context, push func([]byte), ready func()) error {
		return s.opts.Live.Follow(ctx, func(lv LiveVerdict) {
			var v schema.VerdictEvent
			if json.Unmarshal(lv.Data, &v) != nil || !f.match(&v, lv) {
				return
			}
			push(withRoute(lv.Data, lv))
		}, ready)
	})
}

// serveEvents answers with a server-sent event stream: a comment line
// (hello) once follow is ready (subscribed: what is published after the
// client read it reaches the client), then each line follow pushes as an event named name, a
// keep-alive comment every streamKeepAlive, and a "dropped" event with the
// count of lines a slow client missed. It ends when the client goes, the
// service shuts down, or follow returns (NATS went away: the client
// reconnects).
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, hello, name string, follow func(ctx context.Context, push func([]byte), ready func()) error) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, &Error{Type: ErrInternal, Msg: "the connection cannot stream"})
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan []byte, 1024)
	var dropped atomic.Int64
	followed := make(chan error, 1)
	subscribed := make(chan struct{})
	go func() {
		followed <- follow(ctx, func(line []byte) {
			select {
			case events <- line:
			default:
				dropped.Add(1)
			}
		}, func() { close(subscribed) })
	}()
	select {
	case <-subscribed:
	case err := <-followed:
		writeError(w, &Error{Type: ErrUnavailable, Msg: "the live stream could not be followed", Err: err})
		return
	case <-ctx.Done():
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(": " + hello + "\n\n"))
	flusher.Flush()
	tick := time.NewTicker(streamKeepAlive)
	defer tick.Stop()
	told := int64(0)
	for {
		if n := dropped.Load(); n > told {
			if _, err := fmt.Fprintf(w, "event: dropped\ndata: %d\n\n", n-told); err != nil {
				return
			}
			told = n
		}
		var out []byte
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-followed:
			return
		case line := <-events:
			out = append(append([]byte("event: "+name+"\ndata: "), line...), "\n\n"...)
		case <-tick.C:
			out = []byte(": keep-alive\n\n")
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		flusher.Flush()
	}
}
