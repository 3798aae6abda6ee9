package copier

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the throttle's limits, safe to change while the copy runs
// (binlane reloads them on SIGHUP). Zero values mean no limit.
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

// Throttle holds the copy back while the source is busy (Threads_running
// above a limit) or the target's own replicas lag (for targets that have
// replicas: the copy's writes reach them too). Its limits can change while
// the copy runs (Limits). A nil Throttle never waits.
type Throttle struct {
	src      *sql.DB
	replicas []*sql.DB
	limits   *Limits
	log      *slog.Logger

	mu        sync.Mutex
	reason    string
	checkedAt time.Time
}

// NewThrottle returns a throttle reading the source and the given replicas
// (SHOW ALL SLAVES STATUS on each: it needs REPLICA MONITOR (MariaDB
// 10.5+) or REPLICATION CLIENT there). limits may be nil (no limits).
func NewThrottle(src *sql.DB, replicas []*sql.DB, limits *Limits, log *slog.Logger) *Throttle {
	return &Throttle{src: src, replicas: replicas, limits: limits, log: log}
}

// Reason says why the copy waits now ("" when it does not).
func (t *Throttle) Reason() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reason
}

// Wait returns once the limits allow a chunk (checking at most every
// 250 ms).
func (t *Throttle) Wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	for {
		t.mu.Lock()
		fresh := time.Since(t.checkedAt) < 250*time.Millisecond
		reason := t.reason
		t.mu.Unlock()
		if !fresh {
			reason = t.check(ctx)
		}
		if reason == "" {
			return nil
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// check reads the limits' measures and records the reason to wait.
func (t *Throttle) check(ctx context.Context) string {
	maxThreads, maxLag := t.limits.Get()
	reason := ""
	if maxThreads > 0 {
		var name string
		var running int
		if err := t.src.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_running'").Scan(&name, &running); err == nil && running > maxThreads {
			reason = fmt.Sprintf("source Threads_running %d > %d", running, maxThreads)
		}
	}
	if reason == "" && maxLag > 0 {
		for i, r := range t.replicas {
			if lag, ok := replicaLag(ctx, r); ok && lag > maxLag {
				reason = fmt.Sprintf("replica %d of the target is %s behind (> %s)", i+1, lag, maxLag)
				break
			}
		}
	}
	t.mu.Lock()
	if reason != t.reason && t.log != nil {
		if reason == "" {
			t.log.Info("copy goes on", "was", t.reason)
		} else {
			t.log.Info("copy throttled", "reason", reason)
		}
	}
	t.reason, t.checkedAt = reason, time.Now()
	t.mu.Unlock()
	return reason
}

// replicaLag reads Seconds_Behind_Master of a replica's connections (the
// largest).
func replicaLag(ctx context.Context, db *sql.DB) (time.Duration, bool) {
	rows, err := db.QueryContext(ctx, "SHOW ALL SLAVES STATUS")
	if err != nil {
		return 0, false
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var worst time.Duration
	found := false
	for rows.Next() {
		if rows.Scan(ptrs...) != nil {
			return 0, false
		}
		for i, c := range cols {
			if c == "Seconds_Behind_Master" && vals[i] != nil {
				var s int64
				fmt.Sscan(string(vals[i]), &s)
				worst = max(worst, time.Duration(s)*time.Second)
				found = true
			}
		}
	}
	return worst, found
}
