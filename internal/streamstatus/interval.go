package streamstatus

import (
	"time"
)

// Interval is what the stream did between two snapshots of its counters:
// the numbers rates and shares are computed from. Times are summed over
// the workers.
type Interval struct {
	Elapsed        time.Duration
	Workers        int
	Transactions   uint64
	Rows           uint64
	Busy           time.Duration
	DependencyWait time.Duration
	CommitWait     time.Duration
	Commit         time.Duration
	PerWorker      []WorkerInterval
}

// WorkerInterval is one worker's part of an Interval.
type WorkerInterval struct {
	Transactions, Rows                       uint64
	Busy, DependencyWait, CommitWait, Commit time.Duration
}

// Between returns what happened from base to cur. A base of another
// attempt (the counters started anew) or none counts from cur's start.
func Between(base, cur Snapshot) Interval {
	if !base.Started.Equal(cur.Started) || base.At.IsZero() {
		base = Snapshot{At: cur.Started}
	}
	iv := Interval{Elapsed: cur.At.Sub(base.At), Workers: len(cur.Workers)}
	if iv.Elapsed <= 0 {
		iv.Elapsed = 0
	}
	for i, w := range cur.Workers {
		var b WorkerSnapshot
		if i < len(base.Workers) {
			b = base.Workers[i]
		}
		wi := WorkerInterval{Transactions: w.Txns - b.Txns, Rows: w.Rows - b.Rows, Busy: w.Busy - b.Busy,
			DependencyWait: w.DependencyWait - b.DependencyWait, CommitWait: w.CommitWait - b.CommitWait, Commit: w.Commit - b.Commit}
		iv.PerWorker = append(iv.PerWorker, wi)
		iv.Transactions += wi.Transactions
		iv.Rows += wi.Rows
		iv.Busy += wi.Busy
		iv.DependencyWait += wi.DependencyWait
		iv.CommitWait += wi.CommitWait
		iv.Commit += wi.Commit
	}
	return iv
}

// Since returns what the attempt whose counters cur holds did since it
// started.
func Since(cur Snapshot) Interval { return Between(Snapshot{}, cur) }

// share is d as a part of the interval (0 when it has no length).
func (iv Interval) share(d time.Duration) float64 {
	if iv.Elapsed <= 0 {
		return 0
	}
	return d.Seconds() / iv.Elapsed.Seconds()
}

// rate is n per second of the interval.
func (iv Interval) rate(n uint64) float64 {
	if iv.Elapsed <= 0 {
		return 0
	}
	return float64(n) / iv.Elapsed.Seconds()
}
