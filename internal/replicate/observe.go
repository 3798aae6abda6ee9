package replicate

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/copier"
	"github.com/binlane/binlane/internal/metrics"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// Observer follows the stream's current run for metrics and status.
type Observer struct {
	// CopyBars says the copy's progress is drawn as bars (on a terminal):
	// the periodic progress log lines are left out.
	CopyBars bool

	mu        sync.Mutex
	applier   *apply.Applier
	asm       *txn.Assembler
	heartbeat time.Duration // the heartbeat period asked of the source
	copier    *copier.Copier
	copyState *copier.State
}

// AttachCopy is called by a run that copies.
func (o *Observer) AttachCopy(c *copier.Copier, s *copier.State) {
	o.mu.Lock()
	o.copier, o.copyState = c, s
	o.mu.Unlock()
}

// CopyProgress is one table's copy as far as the target committed it.
type CopyProgress struct {
	Table    string `json:"table"`
	Rows     int64  `json:"rows"`
	Estimate int64  `json:"estimate"`
	Done     bool   `json:"done"`
	OnePass  string `json:"one_pass,omitempty"`
}

// Copy returns the copy's progress (nil when the run does not copy).
func (o *Observer) Copy() []CopyProgress {
	o.mu.Lock()
	c := o.copier
	o.mu.Unlock()
	if c == nil {
		return nil
	}
	var out []CopyProgress
	for _, p := range c.Tables() {
		out = append(out, CopyProgress{Table: p.Table, Rows: p.Rows.Load(), Estimate: p.Estimate, Done: p.Done.Load(), OnePass: p.OnePass})
	}
	return out
}

// logCopy logs the copy's progress while it runs.
func (o *Observer) logCopy(log *slog.Logger) {
	o.mu.Lock()
	s := o.copyState
	o.mu.Unlock()
	if s == nil || !s.Copying() || o.CopyBars {
		return
	}
	var rows, est int64
	done, all := 0, 0
	for _, p := range o.Copy() {
		rows, est, all = rows+p.Rows, est+p.Estimate, all+1
		if p.Done {
			done++
		}
	}
	log.Info("copying", "rows", rows, "rows_estimated", est, "tables_done", done, "tables", all)
}

// Attach is called by each run with its applier and assembler.
func (o *Observer) Attach(a *apply.Applier, asm *txn.Assembler) {
	o.mu.Lock()
	o.applier, o.asm = a, asm
	o.mu.Unlock()
}

// Read returns the current reading; false before the first run started.
func (o *Observer) Read() (metrics.Reading, bool) {
	o.mu.Lock()
	a, asm, hb := o.applier, o.asm, o.heartbeat
	o.mu.Unlock()
	if a == nil {
		return metrics.Reading{}, false
	}
	snap := a.Stats().Snapshot()
	lastEvent, lastHeartbeat, eventTS := asm.Liveness()
	return metrics.Reading{Snapshot: snap, Lag: lag(snap, lastEvent, lastHeartbeat, eventTS, hb, time.Now())}, true
}

// lag is how far the target is behind the source, in source commit time:
//   - transactions in flight: the age of the oldest one's commit time;
//   - nothing in flight, and a heartbeat came after the last event (a
//     source sends heartbeats only when it has nothing more to send) and
//     recently: caught up, 0;
//   - no word from the source for three heartbeat periods: stalled; the
//     lag grows with the silence (it is at least that);
//   - otherwise the reader is behind (the applier waits for it): the age of
//     the last event read.
func lag(s apply.Snapshot, lastEvent, lastHeartbeat, eventTS time.Time, hb time.Duration, now time.Time) time.Duration {
	if s.NextTS != 0 {
		return max(0, now.Sub(time.Unix(s.NextTS, 0)))
	}
	contact := lastEvent
	if lastHeartbeat.After(contact) {
		contact = lastHeartbeat
	}
	switch {
	case contact.IsZero():
		return 0 // nothing heard yet: unknown, not late
	case now.Sub(contact) > 3*hb:
		return now.Sub(contact)
	case !lastHeartbeat.Before(lastEvent):
		return 0
	case !eventTS.IsZero():
		return max(0, now.Sub(eventTS))
	}
	return 0
}

// report writes the reading into the stream's row every period, so that
// `binlane status` shows lag and worker load of a running stream, and once
// more when ctx ends, so that a stopped stream shows its whole run. owner
// returns the current run's token (empty before the stream was taken over).
func (o *Observer) report(ctx context.Context, db *sql.DB, stream string, owner func() string, period time.Duration, log *slog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			o.writeReport(final, db, stream, owner(), log)
			cancel()
			return
		case <-t.C:
			o.writeReport(ctx, db, stream, owner(), log)
			o.logCopy(log)
		}
	}
}

func (o *Observer) writeReport(ctx context.Context, db *sql.DB, stream, owner string, log *slog.Logger) {
	r, ok := o.Read()
	if !ok || owner == "" {
		return
	}
	b, err := json.Marshal(r.Snapshot)
	if err != nil {
		return
	}
	if err := position.Report(ctx, db, stream, owner, r.Lag, string(b)); err != nil {
		log.Debug("status report failed", "error", err)
	}
}
