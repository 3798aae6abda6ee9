package replicate

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/metrics"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// Observer follows the stream's current run for metrics and status.
type Observer struct {
	mu      sync.Mutex
	applier *apply.Applier
	asm     *txn.Assembler
}

// Attach is meant as Config.Observe.
func (o *Observer) Attach(a *apply.Applier, asm *txn.Assembler) {
	o.mu.Lock()
	o.applier, o.asm = a, asm
	o.mu.Unlock()
}

// Read returns the current reading; false before the first run started.
func (o *Observer) Read() (metrics.Reading, bool) {
	o.mu.Lock()
	a := o.applier
	o.mu.Unlock()
	if a == nil {
		return metrics.Reading{}, false
	}
	snap := a.Stats().Snapshot()
	return metrics.Reading{Snapshot: snap, Lag: lag(snap, time.Now())}, true
}

// lag is how far behind the source the target is: zero when nothing waits
// to be applied (an idle source is not lag), otherwise the age of the last
// committed transaction's source commit time.
func lag(s apply.Snapshot, now time.Time) time.Duration {
	if s.InFlight == 0 || s.LastCommitTS == 0 {
		return 0
	}
	return max(0, now.Sub(time.Unix(s.LastCommitTS, 0)))
}

// report writes the reading into the stream's row every period, so that
// `binlane status` shows lag and worker load of a running stream, and once
// more when ctx ends, so that a stopped stream shows its whole run.
func (o *Observer) report(ctx context.Context, db *sql.DB, stream string, period time.Duration, log *slog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			o.writeReport(final, db, stream, log)
			cancel()
			return
		case <-t.C:
			o.writeReport(ctx, db, stream, log)
		}
	}
}

func (o *Observer) writeReport(ctx context.Context, db *sql.DB, stream string, log *slog.Logger) {
	r, ok := o.Read()
	if !ok {
		return
	}
	b, err := json.Marshal(r.Snapshot)
	if err != nil {
		return
	}
	if err := position.Report(ctx, db, stream, r.Lag, string(b)); err != nil {
		log.Debug("status report failed", "error", err)
	}
}
