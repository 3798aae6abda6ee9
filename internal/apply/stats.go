package apply

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlane/binlane/internal/streamstatus"
)

// WorkerStats are one worker's counters. Times are cumulative.
type WorkerStats struct {
	Txns       atomic.Uint64 // source transactions committed
	Batches    atomic.Uint64 // target transactions committed
	Rows       atomic.Uint64 // row changes applied
	Retries    atomic.Uint64 // batches rolled back and re-run
	Busy       atomic.Int64  // ns applying statements (not waiting for the turn, not committing)
	CommitWait atomic.Int64  // ns waiting for the commit turn
	Commit     atomic.Int64  // ns committing
	// DependencyWait sums the scheduler waits (see Stats.DependencyWait)
	// of the transactions handed to this worker: summed over workers it is
	// Stats.DependencyWait.
	DependencyWait atomic.Int64
}

// Stats are the applier's counters, safe to read while it runs.
type Stats struct {
	Workers []WorkerStats
	// DependencyWait sums, over transactions, the time from entering the
	// scheduler to being dispatched while waiting on a conflict.
	DependencyWait atomic.Int64
	Committed      atomic.Uint64 // source transactions committed
	CopiedRows     atomic.Uint64 // rows of copied chunks committed
	// ChunksBeside counts copied chunks that started while another chunk of
	// their table was being written.
	ChunksBeside atomic.Uint64
	// Chained counts the batches prepared while the batches they depend
	// on applied (see scheduler.Config.Chain).
	Chained atomic.Uint64
	// RenderedAhead counts the batches rendered while the batch before
	// them on the same connection committed; AheadGaveWay those of them
	// handed back unapplied because that batch failed (see ahead.go).
	RenderedAhead atomic.Uint64
	// SentAhead counts the round trips sent before the answer to the
	// commit before them (sendAhead).
	SentAhead    atomic.Uint64
	AheadGaveWay atomic.Uint64
	// HeldRoundTrips counts the full round trips of batches rendered
	// ahead, held and sent when their batch was applied (rowsql's Hold).
	HeldRoundTrips atomic.Uint64
	// RedoneOneByOne counts merged batches the target refused that then
	// committed applied one statement at a time (diagnose).
	RedoneOneByOne atomic.Uint64
	InFlight       atomic.Int64  // transactions in the scheduler
	Window         atomic.Int64  // the bound on InFlight (see window.go)
	PeakInFlight   atomic.Int64  // the most InFlight has been
	Pending        atomic.Int64  // of those, not yet dispatched
	LockWaitKills  atomic.Uint64 // later transactions rolled back to let an earlier one through
	// BlindLockWaitKills are those rolled back without seeing the target's
	// lock waits (no PROCESS privilege).
	BlindLockWaitKills atomic.Uint64
	LastCommitTS       atomic.Int64 // source timestamp (unix s) of the last committed transaction
	// NextTS is the source commit time (unix s) of the oldest transaction
	// received and not committed; 0 when none is in flight.
	NextTS       atomic.Int64
	LastCommitAt atomic.Int64 // unix ns of the last commit

	Started time.Time

	position atomic.Pointer[string] // GTID position applied up to (in memory: saved or about to be)
	// domainNext is NextTS by MariaDB GTID domain, for the domains with a
	// transaction in flight (published by the coordinator; never changed
	// after).
	domainNext atomic.Pointer[map[uint32]int64]

	mu         sync.Mutex
	conflicts  map[string]uint64 // by table: transactions that waited on a conflict
	serialized map[string]uint64 // by reason code: transactions that ran alone
}

func newStats(workers int) *Stats {
	return &Stats{Workers: make([]WorkerStats, workers), Started: time.Now(), conflicts: map[string]uint64{}, serialized: map[string]uint64{}}
}

// maxConflictTables bounds the tables conflicts are counted for by name
// (they become metric labels); the rest count as "other".
const maxConflictTables = 100

func (s *Stats) addConflict(table string) {
	s.mu.Lock()
	if _, ok := s.conflicts[table]; !ok && len(s.conflicts) >= maxConflictTables {
		table = "other"
	}
	s.conflicts[table]++
	s.mu.Unlock()
}

func (s *Stats) addSerialized(reason string) {
	s.mu.Lock()
	s.serialized[reason]++
	s.mu.Unlock()
}

// setPosition records the position applied up to.
func (s *Stats) setPosition(gtids string) { s.position.Store(&gtids) }

// Position returns the GTID position applied up to ("" before the applier
// started).
func (s *Stats) Position() string {
	if p := s.position.Load(); p != nil {
		return *p
	}
	return ""
}

// Conflicts returns transactions that waited on a conflict, by table.
func (s *Stats) Conflicts() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.conflicts)
}

// Serialized returns transactions that ran alone, by reason.
func (s *Stats) Serialized() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.serialized)
}

// Snapshot copies the counters, for display and the stream's report.
func (s *Stats) Snapshot() streamstatus.Snapshot {
	snap := streamstatus.Snapshot{At: time.Now(), Started: s.Started, Committed: s.Committed.Load(), InFlight: s.InFlight.Load(), Pending: s.Pending.Load(),
		Window: s.Window.Load(), PeakInFlight: s.PeakInFlight.Load(),
		LockWaitKills: s.LockWaitKills.Load(), BlindKills: s.BlindLockWaitKills.Load(), Chained: s.Chained.Load(), RenderedAhead: s.RenderedAhead.Load(), SentAhead: s.SentAhead.Load(), AheadGaveWay: s.AheadGaveWay.Load(), RedoneOneByOne: s.RedoneOneByOne.Load(), DependencyWait: time.Duration(s.DependencyWait.Load()),
		LastCommitTS: s.LastCommitTS.Load(), Position: s.Position(), NextTS: s.NextTS.Load(), Conflicts: s.Conflicts(), Serialized: s.Serialized()}
	if m := s.domainNext.Load(); m != nil && len(*m) > 0 {
		snap.DomainNextTS = maps.Clone(*m)
	}
	for i := range s.Workers {
		w := &s.Workers[i]
		snap.Workers = append(snap.Workers, streamstatus.WorkerSnapshot{Txns: w.Txns.Load(), Batches: w.Batches.Load(), Rows: w.Rows.Load(),
			Retries: w.Retries.Load(), Busy: time.Duration(w.Busy.Load()), CommitWait: time.Duration(w.CommitWait.Load()),
			Commit: time.Duration(w.Commit.Load()), DependencyWait: time.Duration(w.DependencyWait.Load())})
	}
	return snap
}
