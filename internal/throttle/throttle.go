// Package throttle decides whether binlane's work may go on now, and if not,
// why: the copy's chunks, the applier's next transaction and verify's next
// chunk all ask it first. It holds them while the source is busy
// (Threads_running above a limit) or a replica of the target lags more than
// a limit (read with SHOW REPLICA STATUS / SHOW SLAVE STATUS / MariaDB's
// SHOW ALL SLAVES STATUS, or from a pt-heartbeat table).
//
// It fails closed: a limit whose measure cannot be read (a failed query,
// an unreachable replica, a replica whose lag is NULL because its
// replication stopped, a heartbeat that never came) holds the work back,
// and the reason says so, as it says which limit holds it otherwise. The
// limits can change while binlane runs (SIGHUP).
//
// The package owns that decision and the queries behind it. It only reads
// (SHOW GLOBAL STATUS, SHOW ... STATUS, a SELECT of the heartbeat table);
// it must never write, and never hold a connection while it waits.
package throttle

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the throttle's limits, safe to change while binlane runs
// (it reloads them on SIGHUP). Zero values mean no limit.
type Limits struct {
	threads atomic.Int64
	lag     atomic.Int64 // ns
}

// NewLimits returns limits set to maxThreads and maxLag.
func NewLimits(maxThreads int, maxLag time.Duration) *Limits {
	l := &Limits{}
	l.Set(maxThreads, maxLag)
	return l
}

// Set changes the limits.
func (l *Limits) Set(maxThreads int, maxLag time.Duration) {
	l.threads.Store(int64(maxThreads))
	l.lag.Store(int64(maxLag))
}

// Get returns the limits.
func (l *Limits) Get() (maxThreads int, maxLag time.Duration) {
	if l == nil {
		return 0, 0
	}
	return int(l.threads.Load()), time.Duration(l.lag.Load())
}

// Replica is a replica of the target whose lag is watched.
type Replica struct {
	Name string // how reasons name it (its address, password hidden)
	DB   *sql.DB
}

// Config says what the throttle reads.
type Config struct {
	// Source is where Threads_running is read (--max-threads-running).
	Source *sql.DB
	// Replicas are the target's replicas (--max-replica-lag).
	Replicas []Replica
	// HeartbeatTable, when set ("db.table"), is a pt-heartbeat table read
	// on each replica instead of its replication status: the lag is the
	// age of the newest heartbeat there (pt-heartbeat --utc).
	HeartbeatTable string
	Limits         *Limits
	// Every is how often the measures are read while work waits or goes
	// on (default 250 ms); a decision is reused for that long.
	Every time.Duration
	// Logger gets a line when the work is held and when it goes on.
	Logger *slog.Logger
}

// Throttle answers whether work may go on. A nil Throttle never holds.
type Throttle struct {
	cfg Config

	// probes remember each replica's flavor between checks; checking is
	// held by the one caller reading the measures.
	probes   []*lagProbe
	checking sync.Mutex

	mu        sync.Mutex
	reason    string
	checkedAt time.Time
}

// New returns a throttle; cfg.Limits may be nil (no limits).
func New(cfg Config) *Throttle {
	if cfg.Every <= 0 {
		cfg.Every = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Throttle{cfg: cfg}
	for _, r := range cfg.Replicas {
		t.probes = append(t.probes, &lagProbe{replica: r, heartbeat: cfg.HeartbeatTable})
	}
	return t
}

// Limits returns the limits the throttle applies (nil when none).
func (t *Throttle) Limits() *Limits {
	if t == nil {
		return nil
	}
	return t.cfg.Limits
}

// Reason says why work is held now ("" when it is not).
func (t *Throttle) Reason() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reason
}

// Wait returns once the limits let work go on, or when ctx ends.
func (t *Throttle) Wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	for {
		maxThreads, maxLag := t.cfg.Limits.Get()
		if maxThreads <= 0 && maxLag <= 0 {
			t.record("")
			return ctx.Err()
		}
		// One caller reads the measures; the others wait for its decision
		// rather than go on with an old one.
		t.checking.Lock()
		t.mu.Lock()
		fresh := time.Since(t.checkedAt) < t.cfg.Every
		reason := t.reason
		t.mu.Unlock()
		if !fresh {
			reason = t.Check(ctx)
		}
		t.checking.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		if reason == "" {
			return nil
		}
		select {
		case <-time.After(t.cfg.Every):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Check reads the measures the limits need now and records the decision:
// the reason work is held, or "". Calls must not overlap (Wait sees to it).
func (t *Throttle) Check(ctx context.Context) string {
	maxThreads, maxLag := t.cfg.Limits.Get()
	m := measures{}
	if maxThreads > 0 {
		m.threads, m.threadsErr = threadsRunning(ctx, t.cfg.Source)
	}
	if maxLag > 0 {
		for _, p := range t.probes {
			lag, err := p.read(ctx)
			m.replicas = append(m.replicas, replicaLag{name: p.replica.Name, lag: lag, err: err})
		}
	}
	if ctx.Err() != nil {
		return t.Reason() // a stop is no measure
	}
	reason := decide(maxThreads, maxLag, m)
	t.record(reason)
	return reason
}

func (t *Throttle) record(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if reason != t.reason {
		if reason == "" {
			t.cfg.Logger.Info("limits allow work again", "was", t.reason)
		} else {
			t.cfg.Logger.Warn("work held back", "reason", reason)
		}
	}
	t.reason, t.checkedAt = reason, time.Now()
}
