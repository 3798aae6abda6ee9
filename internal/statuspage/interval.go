package statuspage

import (
	"sync"
	"time"

	"github.com/binlane/binlane/internal/apply"
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

// interval returns what happened from base to cur. A base of another
// attempt (the counters started anew) or none counts from cur's start.
func interval(base, cur apply.Snapshot) Interval {
	if !base.Started.Equal(cur.Started) || base.At.IsZero() {
		base = apply.Snapshot{At: cur.Started}
	}
	iv := Interval{Elapsed: cur.At.Sub(base.At), Workers: len(cur.Workers)}
	if iv.Elapsed <= 0 {
		iv.Elapsed = 0
	}
	for i, w := range cur.Workers {
		var b apply.WorkerSnapshot
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
func Since(cur apply.Snapshot) Interval { return interval(apply.Snapshot{}, cur) }

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

// sampler keeps the snapshots of the last window, taken when the status is
// read (at most one a second), so that rates are over the last window
// whoever asks and however often: the oldest snapshot kept is the last one
// taken at or before the window's start.
type sampler struct {
	window time.Duration

	mu      sync.Mutex
	samples []apply.Snapshot
	last    Interval // the interval of the last reading
}

// sampleEvery bounds how many snapshots a window holds.
const sampleEvery = time.Second

// next records cur and returns the interval from the window's start to it.
func (s *sampler) next(cur apply.Snapshot) Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur.At.IsZero() {
		return Interval{}
	}
	if len(s.samples) > 0 && !s.samples[0].Started.Equal(cur.Started) {
		s.samples = s.samples[:0] // a new attempt: its counters start at 0
	}
	from := cur.At.Add(-s.window)
	for len(s.samples) > 1 && !s.samples[1].At.After(from) {
		s.samples = s.samples[1:]
	}
	var base apply.Snapshot
	if len(s.samples) > 0 {
		base = s.samples[0]
	}
	if n := len(s.samples); n == 0 || cur.At.Sub(s.samples[n-1].At) >= sampleEvery {
		s.samples = append(s.samples, cur)
	}
	s.last = interval(base, cur)
	return s.last
}

// lastInterval returns the interval of the last reading.
func (s *sampler) lastInterval() Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
