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

// States of a stream as the Observer sees it.
const (
	StateStarting   = "starting"   // no attempt has attached yet
	StateCopying    = "copying"    // running, tables still being copied
	StateRunning    = "running"    // applying, behind the source or not known to be caught up
	StateCaughtUp   = "caught_up"  // running, nothing in flight, the source has nothing more
	StateRestarting = "restarting" // an attempt failed; the next one is on its way
	StatePaused     = "paused"     // holding for a pause request (binlane pause, online verify, cutover)
	StateStopped    = "stopped"    // Run returned without an error
	StateError      = "error"      // Run returned an error
)

// Status is what the Observer knows of the stream at one moment.
type Status struct {
	State string
	// Position is the GTID position applied up to ("" before the first
	// attempt attached).
	Position string
	Lag      time.Duration
	// Domains splits Position and Lag by MariaDB GTID domain when the
	// position has several (nil otherwise).
	Domains []DomainLag
	// Snapshot is the current attempt's counters (zero before the first).
	Snapshot apply.Snapshot
	Copy     []CopyProgress
	// Throttled says why binlane holds its work back now ("" when it
	// does not).
	Throttled string
	// Restarts counts the attempts that failed and were retried.
	Restarts int
	// LastError is the last error that failed an attempt or ended the
	// stream, with secrets redacted; it stays after a successful restart.
	LastError   string
	LastErrorAt time.Time
}

// Running reports whether the stream is applying (whatever its lag).
func (s Status) Running() bool {
	return s.State == StateRunning || s.State == StateCaughtUp || s.State == StateCopying
}

// Status returns the stream's state, position, lag, counters and copy.
func (o *Observer) Status() Status {
	o.mu.Lock()
	a, asm, hb, cs := o.applier, o.asm, o.heartbeat, o.copyState
	st := Status{LastError: o.lastErr, LastErrorAt: o.lastErrAt, Restarts: o.restarts, Throttled: o.throttle.Reason()}
	between, ended, paused := o.between, o.ended, o.paused
	o.mu.Unlock()
	if a == nil {
		st.State = StateStarting
		switch {
		case ended != "":
			st.State = ended
		case paused:
			st.State = StatePaused
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
		st.State = StatePaused
	case between:
		st.State = StateRestarting
	case cs != nil && cs.Copying():
		st.State = StateCopying
	case caughtUp(st.Snapshot, lastEvent, lastHeartbeat, hb, now):
		st.State = StateCaughtUp
	default:
		st.State = StateRunning
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
		o.ended = StateError
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
	o.ended = StateStopped
	o.mu.Unlock()
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
	// Throttled says why the copy of a table not done yet waits now.
	Throttled string `json:"throttled,omitempty"`
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
	o.mu.Lock()
	why := o.throttle.Reason()
	o.mu.Unlock()
	for _, p := range c.Tables() {
		cp := CopyProgress{Table: p.Table, Rows: p.Rows.Load(), Estimate: p.Estimate, Done: p.Done.Load(), OnePass: p.OnePass}
		if !cp.Done {
			cp.Throttled = why
		}
		out = append(out, cp)
	}
	return out
}

// CopyTotals sum a copy's progress over its tables.
type CopyTotals struct {
	Rows, Estimate int64 // the estimate is at least the rows copied, per table
	Done, Tables   int
	Throttled      string // why the copy waits now ("" when it does not)
}

// SumCopy adds up the tables' progress.
func SumCopy(tables []CopyProgress) CopyTotals {
	t := CopyTotals{Tables: len(tables)}
	for _, p := range tables {
		t.Rows += p.Rows
		t.Estimate += max(p.Estimate, p.Rows)
		if p.Done {
			t.Done++
		}
		t.Throttled = max(t.Throttled, p.Throttled)
	}
	return t
}

// logCopy logs the copy's progress while it runs.
func (o *Observer) logCopy(log *slog.Logger) {
	o.mu.Lock()
	s := o.copyState
	o.mu.Unlock()
	if s == nil || !s.Copying() || o.CopyBars {
		return
	}
	t := SumCopy(o.Copy())
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

// DomainLag is one MariaDB GTID domain's position and lag.
type DomainLag struct {
	Domain uint32        `json:"domain"`
	GTID   string        `json:"gtid"`
	Lag    time.Duration `json:"lag_ns"`
}

// domainLags splits the position and the lag by GTID domain when the
// position has several: each domain commits in its own order, so one can
// be far behind while another is caught up. A domain with a transaction in
// flight lags by the age of the oldest one's source commit time; one with
// none by idle, the lag of the stream with nothing in flight (the reader's).
func domainLags(s apply.Snapshot, idle time.Duration, now time.Time) []DomainLag {
	set, err := gtid.ParseSet(s.Position)
	if err != nil || set.Flavor() != gtid.MariaDB || len(set.Domains()) < 2 {
		return nil
	}
	var out []DomainLag
	for _, g := range set.Domains() {
		d := DomainLag{Domain: g.Domain, GTID: g.String(), Lag: idle}
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
func caughtUp(s apply.Snapshot, lastEvent, lastHeartbeat time.Time, hb time.Duration, now time.Time) bool {
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

// Report is what the running process writes into its stream's row every
// few seconds (binlane.streams.stats) for `binlane status`: its applier's
// counters and its own view of the stream.
type Report struct {
	apply.Snapshot
	State    string `json:"state"`
	Held     string `json:"held,omitempty"`
	Restarts int    `json:"restarts"`
	// Domains: see Status.
	Domains []DomainLag `json:"domains,omitempty"`
}

func (o *Observer) writeReport(ctx context.Context, db *sql.DB, stream, owner string, log *slog.Logger) {
	r, ok := o.Read()
	if !ok || owner == "" {
		return
	}
	st := o.Status()
	b, err := json.Marshal(Report{Snapshot: r.Snapshot, State: st.State, Held: st.Throttled, Restarts: st.Restarts, Domains: st.Domains})
	if err != nil {
		return
	}
	if err := position.Report(ctx, db, stream, owner, r.Lag, string(b)); err != nil {
		log.Debug("status report failed", "error", err)
	}
}
