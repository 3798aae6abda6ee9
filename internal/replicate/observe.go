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
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/metrics"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/throttle"
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
	throttle  *throttle.Throttle
	copier    *copier.Copier
	copyState *copier.State
	// between is set from a failed attempt until the next one attaches;
	// ended is the state Run ended in ("" while it runs).
	between   bool
	paused    bool // holding for a pause request
	ended     string
	lastErr   string // redacted
	lastErrAt time.Time
	restarts  int
}

// Status returns the stream's state, position, lag, counters and copy.
func (o *Observer) Status() streamstatus.Status {
	o.mu.Lock()
	a, asm, hb, cs := o.applier, o.asm, o.heartbeat, o.copyState
	st := streamstatus.Status{LastError: o.lastErr, LastErrorAt: o.lastErrAt, Restarts: o.restarts, Throttled: o.throttle.Reason()}
	between, ended, paused := o.between, o.ended, o.paused
	o.mu.Unlock()
	if a == nil {
		st.State = streamstatus.StateStarting
		switch {
		case ended != "":
			st.State = ended
		case paused:
			st.State = streamstatus.StatePaused
		}
		return st
	}
	now := time.Now()
	st.Snapshot = a.Stats().Snapshot()
	st.Position = st.Snapshot.Position
	lastEvent, lastHeartbeat, eventTS := asm.Liveness()
	st.Lag = lag(st.Snapshot, lastEvent, lastHeartbeat, eventTS, hb, now)
	idle := st.Snapshot
	idle.NextTS = 0
	st.Domains = domainLags(st.Snapshot, lag(idle, lastEvent, lastHeartbeat, eventTS, hb, now), now)
	st.Copy = o.Copy()
	switch {
	case ended != "":
		st.State = ended
	case paused:
		st.State = streamstatus.StatePaused
	case between:
		st.State = streamstatus.StateRestarting
	case cs != nil && cs.Copying():
		st.State = streamstatus.StateCopying
	case caughtUp(st.Snapshot, lastEvent, lastHeartbeat, hb, now):
		st.State = streamstatus.StateCaughtUp
	default:
		st.State = streamstatus.StateRunning
	}
	return st
}

// failed records an error that ended an attempt; final says it ended the
// stream too.
func (o *Observer) failed(err error, final bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lastErr, o.lastErrAt = redact.Text(err.Error()), time.Now()
	if final {
		o.ended = streamstatus.StateError
	} else {
		o.between = true
		o.restarts++
	}
}

// setPaused records that the stream holds for a pause request (or no
// longer does).
func (o *Observer) setPaused(p bool) {
	o.mu.Lock()
	o.paused = p
	o.mu.Unlock()
}

// stopped records that Run returned without an error.
func (o *Observer) stopped() {
	o.mu.Lock()
	o.ended = streamstatus.StateStopped
	o.mu.Unlock()
}

// AttachCopy is called by a run that copies.
func (o *Observer) AttachCopy(c *copier.Copier, s *copier.State) {
	o.mu.Lock()
	o.copier, o.copyState = c, s
	o.mu.Unlock()
}

// Copy returns the copy's progress (nil when the run does not copy).
func (o *Observer) Copy() []streamstatus.CopyProgress {
	o.mu.Lock()
	c := o.copier
	o.mu.Unlock()
	if c == nil {
		return nil
	}
	var out []streamstatus.CopyProgress
	o.mu.Lock()
	why := o.throttle.Reason()
	o.mu.Unlock()
	for _, p := range c.Tables() {
		cp := streamstatus.CopyProgress{Table: p.Table, Rows: p.Rows.Load(), Estimate: p.Estimate, Done: p.Done.Load(), OnePass: p.OnePass}
		if !cp.Done {
			cp.Throttled = why
		}
		out = append(out, cp)
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
	t := streamstatus.SumCopy(o.Copy())
	args := []any{"rows", t.Rows, "rows_estimated", t.Estimate, "tables_done", t.Done, "tables", t.Tables}
	if t.Throttled != "" {
		args = append(args, "throttled", t.Throttled)
	}
	log.Info("copying", args...)
}

// Attach is called by each run with its applier and assembler.
func (o *Observer) Attach(a *apply.Applier, asm *txn.Assembler) {
	o.mu.Lock()
	o.applier, o.asm, o.between = a, asm, false
	o.mu.Unlock()
}

// Read returns the current reading for metrics; false before the first
// run started (the reading then has the state only).
func (o *Observer) Read() (metrics.Reading, bool) {
	st := o.Status()
	r := metrics.Reading{State: st.State, Restarts: st.Restarts, Held: st.Throttled != "", Snapshot: st.Snapshot, Lag: st.Lag}
	for _, d := range st.Domains {
		g, _ := gtid.Parse(d.GTID)
		r.Domains = append(r.Domains, metrics.Domain{Domain: d.Domain, Seq: g.Seq, Lag: d.Lag})
	}
	for _, c := range st.Copy {
		r.Copy = append(r.Copy, metrics.CopyTable{Table: c.Table, Rows: c.Rows, Estimate: c.Estimate, Done: c.Done})
	}
	return r, !st.Snapshot.At.IsZero()
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
func lag(s streamstatus.Snapshot, lastEvent, lastHeartbeat, eventTS time.Time, hb time.Duration, now time.Time) time.Duration {
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

// domainLags splits the position and the lag by GTID domain when the
// position has several: each domain commits in its own order, so one can
// be far behind while another is caught up. A domain with a transaction in
// flight lags by the age of the oldest one's source commit time; one with
// none by idle, the lag of the stream with nothing in flight (the reader's).
func domainLags(s streamstatus.Snapshot, idle time.Duration, now time.Time) []streamstatus.DomainLag {
	set, err := gtid.ParseSet(s.Position)
	if err != nil || set.Flavor() != gtid.MariaDB || len(set.Domains()) < 2 {
		return nil
	}
	var out []streamstatus.DomainLag
	for _, g := range set.Domains() {
		d := streamstatus.DomainLag{Domain: g.Domain, GTID: g.String(), Lag: idle}
		if ts, ok := s.DomainNextTS[g.Domain]; ok {
			d.Lag = max(0, now.Sub(time.Unix(ts, 0)))
		}
		out = append(out, d)
	}
	return out
}

// caughtUp reports whether the target has applied everything the source
// had to send: nothing in flight, and a recent heartbeat came after the
// last event (see lag).
func caughtUp(s streamstatus.Snapshot, lastEvent, lastHeartbeat time.Time, hb time.Duration, now time.Time) bool {
	return s.NextTS == 0 && s.InFlight == 0 && !lastHeartbeat.IsZero() && !lastHeartbeat.Before(lastEvent) &&
		now.Sub(lastHeartbeat) <= 3*hb
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
	st := o.Status()
	b, err := json.Marshal(streamstatus.Report{Snapshot: r.Snapshot, State: st.State, Held: st.Throttled, Restarts: st.Restarts, Domains: st.Domains})
	if err != nil {
		return
	}
	if err := position.Report(ctx, db, stream, owner, r.Lag, string(b)); err != nil {
		log.Debug("status report failed", "error", err)
	}
}
