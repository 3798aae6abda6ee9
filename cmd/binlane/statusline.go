package main

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/streamstatus"
)

// logStatus logs one line every period once the stream has copied its
// tables (the copy logs its own progress): state, position, lag and the
// transactions per second since the last line, so that a log shows how a
// stream did without a status page.
func logStatus(ctx context.Context, obs *replicate.Observer, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	var prev streamstatus.Snapshot
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := obs.Status()
		if st.State == streamstatus.StateCopying || st.State == streamstatus.StateStarting {
			continue
		}
		log.Info("status", statusLine(st, prev)...)
		prev = st.Snapshot
	}
}

// statusLine is the status line's attributes; prev is the snapshot of the
// line before (the rate covers the time between them).
func statusLine(st streamstatus.Status, prev streamstatus.Snapshot) []any {
	args := []any{"state", st.State, "position", st.Position, "lag", st.Lag.Round(time.Millisecond)}
	cur := st.Snapshot
	base := prev
	if !base.Started.Equal(cur.Started) || base.At.IsZero() {
		base = streamstatus.Snapshot{At: cur.Started} // a new attempt: its counters start at 0
	}
	rate := 0.0
	if d := cur.At.Sub(base.At).Seconds(); d > 0 && cur.Committed >= base.Committed {
		rate = float64(cur.Committed-base.Committed) / d
	}
	args = append(args, "trx_per_sec", math.Round(rate*10)/10)
	if st.Throttled != "" {
		args = append(args, "held", st.Throttled)
	}
	if st.Restarts > 0 {
		args = append(args, "restarts", st.Restarts)
	}
	return args
}
