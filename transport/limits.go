package transport

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/ponens/ponens/schema"
)

// StreamUsage is how full one stream is against its limits.
type StreamUsage struct {
	Stream   string `json:"stream"`
	Msgs     uint64 `json:"msgs"`
	Bytes    uint64 `json:"bytes"`
	MaxMsgs  int64  `json:"max_msgs"`  // -1: no limit
	MaxBytes int64  `json:"max_bytes"` // -1: no limit
	// Used is the larger of Msgs/MaxMsgs and Bytes/MaxBytes (0 without
	// limits): at 1 the stream refuses (EVENTS, VERDICTS) or evicts
	// (DEADLETTER).
	Used float64 `json:"used"`
	// Alarm is Used at or over the alarm threshold.
	Alarm bool `json:"alarm"`
	// Discard is what happens at a limit: "new" (refused) or "old"
	// (the oldest dropped).
	Discard string `json:"discard"`
}

// Usage returns how full EVENTS, VERDICTS and DEADLETTER are; alarm is the
// fraction of a limit (0 < alarm <= 1) at which Alarm is set.
func Usage(ctx context.Context, js natsjs.JetStream, alarm float64) ([]StreamUsage, error) {
	var out []StreamUsage
	for _, name := range []string{schema.StreamEvents, schema.StreamVerdicts, schema.StreamDeadLetter} {
		st, err := stream(ctx, js, name)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		info := st.CachedInfo()
		u := StreamUsage{Stream: name, Msgs: info.State.Msgs, Bytes: info.State.Bytes,
			MaxMsgs: info.Config.MaxMsgs, MaxBytes: info.Config.MaxBytes, Discard: "old"}
		if info.Config.Discard == natsjs.DiscardNew {
			u.Discard = "new"
		}
		if u.MaxMsgs > 0 {
			u.Used = float64(u.Msgs) / float64(u.MaxMsgs)
		}
		if u.MaxBytes > 0 {
			u.Used = max(u.Used, float64(u.Bytes)/float64(u.MaxBytes))
		}
		u.Alarm = u.Used > 0 && u.Used >= alarm
		out = append(out, u)
	}
	return out, nil
}

// WatchLimits checks Usage every interval until ctx ends, handing each
// reading to observe when it is not nil (metrics). When a stream reaches
// alarm it logs a warning (once, until it falls back under, which is
// logged at info). Failures to read the streams are logged at debug: the
// health check reports a lost connection.
func WatchLimits(ctx context.Context, js natsjs.JetStream, alarm float64, every time.Duration, log *slog.Logger, observe func([]StreamUsage)) error {
	on := map[string]bool{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		us, err := Usage(ctx, js, alarm)
		if err != nil {
			log.Debug("stream limits not read", "err", err)
		} else if observe != nil {
			observe(us)
		}
		for _, u := range us {
			switch {
			case u.Alarm && !on[u.Stream]:
				what := "new messages will be refused"
				if u.Discard == "old" {
					what = "the oldest messages will be dropped"
				}
				log.Warn("stream near its limit", "stream", u.Stream, "used", fmt.Sprintf("%.0f%%", 100*u.Used),
					"msgs", u.Msgs, "max_msgs", u.MaxMsgs, "bytes", u.Bytes, "max_bytes", u.MaxBytes, "at_limit", what)
			case !u.Alarm && on[u.Stream]:
				log.Info("stream back under its limit alarm", "stream", u.Stream, "used", fmt.Sprintf("%.0f%%", 100*u.Used))
			}
			on[u.Stream] = u.Alarm
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
