package api

import (
	"context"
	"strconv"
)

// DeadLetter is a message the pipeline set aside, as the sink stored it.
type DeadLetter struct {
	StreamSeq uint64 `json:"streamSeq"` // its position on the dead-letter stream
	TS        string `json:"ts"`
	Subject   string `json:"subject"` // where it was published
	Reason    string `json:"reason"`
	Source    string `json:"source"` // the part that refused it (gateway, worker, alert, …)
	Error     string `json:"error"`
	Body      string `json:"body"`      // the message, cut to the stored bound
	Truncated uint64 `json:"truncated"` // bytes cut from it
}

// DeadLetterPage is one page of dead letters, newest first; NextBefore,
// when not zero, is the before of the next page.
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"deadLetters"`
	NextBefore  uint64       `json:"nextBefore"`
}

// DeadLetterOptions select dead letters: by time, reason and source, at
// most Limit of them below stream position Before (0: from the newest).
type DeadLetterOptions struct {
	Selection      // Since and Until only
	Reason, Source string
	Before         uint64
	Limit          int
}

// DeadLetters lists the stored dead letters of a selection, newest first.
func (s *Server) DeadLetters(ctx context.Context, o DeadLetterOptions) (*DeadLetterPage, error) {
	if o.Limit <= 0 {
		o.Limit = 100
	}
	st := newStmt(`SELECT stream_seq AS streamSeq, toUnixTimestamp64Milli(ts) AS ms, subject, toString(reason) AS reason,
  toString(source) AS source, error, body, truncated FROM dead_letters FINAL WHERE 1`)
	timeWindow(st, "ts", o.Since, o.Until)
	if o.Reason != "" {
		st.sql(" AND reason = " + st.str(o.Reason))
	}
	if o.Source != "" {
		st.sql(" AND source = " + st.str(o.Source))
	}
	if o.Before > 0 {
		st.sql(" AND stream_seq < " + st.arg("UInt64", strconv.FormatUint(o.Before, 10)))
	}
	st.sql(" ORDER BY stream_seq DESC LIMIT " + st.arg("UInt32", strconv.Itoa(o.Limit+1)))
	type row struct {
		DeadLetter
		MS int64 `json:"ms"`
	}
	rs, err := rows[row](ctx, s.store, st)
	if err != nil {
		return nil, storeError(err)
	}
	page := &DeadLetterPage{DeadLetters: []DeadLetter{}}
	for i, r := range rs {
		if i == o.Limit {
			page.NextBefore = rs[i-1].StreamSeq
			break
		}
		r.DeadLetter.TS = timeText(msTime(r.MS))
		page.DeadLetters = append(page.DeadLetters, r.DeadLetter)
	}
	return page, nil
}
