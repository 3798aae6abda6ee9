package streamstatus

import "time"

// The types below are what a running process knows of its stream. They
// live here, with the document built from them, so that what reads them
// (the status page, metrics, bench, the command's status line) needs no
// import of the orchestrators that fill them: package apply takes
// Snapshots of its counters, package replicate's Observer builds Status
// and writes Report.

// Snapshot is a consistent-enough copy of an applier's counters for
// display (apply.Stats.Snapshot). It is stored as JSON in the stream's row
// (Report), so its tags are a stored format.
type Snapshot struct {
	At        time.Time `json:"at"`
	Started   time.Time `json:"started"`
	Committed uint64    `json:"committed"`
	InFlight  int64     `json:"in_flight"`
	Pending   int64     `json:"pending"`
	// Window is the bound on InFlight now (see Run.Window); PeakInFlight the most InFlight has been.
	Window        int64  `json:"window,omitempty"`
	PeakInFlight  int64  `json:"peak_in_flight,omitempty"`
	LockWaitKills uint64 `json:"lock_wait_kills"`
	BlindKills    uint64 `json:"blind_lock_wait_kills"`
	// Chained: batches prepared while those they depend on applied.
	Chained uint64 `json:"chained_batches,omitempty"`
	// RenderedAhead: batches rendered while the batch before them on the
	// same connection committed; AheadGaveWay: of those, handed back
	// unapplied because that batch failed.
	RenderedAhead uint64 `json:"rendered_ahead_batches,omitempty"`
	AheadGaveWay  uint64 `json:"ahead_batches_handed_back,omitempty"`
	// SentAhead: round trips sent while the commit before them on the same
	// connection was in flight (one worker).
	SentAhead uint64 `json:"round_trips_sent_ahead,omitempty"`
	// RedoneOneByOne: merged batches the target refused and that then
	// committed applied one statement at a time, in source order.
	RedoneOneByOne uint64        `json:"batches_redone_one_by_one,omitempty"`
	DependencyWait time.Duration `json:"dependency_wait_ns"`
	LastCommitTS   int64         `json:"last_commit_source_ts"`
	Position       string        `json:"position,omitempty"`
	NextTS         int64         `json:"next_source_ts"`
	// DomainNextTS is NextTS by MariaDB GTID domain: the domains missing
	// have nothing in flight (each domain commits in its own order, so
	// each has its own lag).
	DomainNextTS map[uint32]int64  `json:"domain_next_source_ts,omitempty"`
	Workers      []WorkerSnapshot  `json:"workers"`
	Conflicts    map[string]uint64 `json:"conflicts_by_table"`
	Serialized   map[string]uint64 `json:"serialized_by_reason"`
}

// WorkerSnapshot is one worker's counters.
type WorkerSnapshot struct {
	Txns       uint64        `json:"txns"`
	Batches    uint64        `json:"batches"`
	Rows       uint64        `json:"rows"`
	Retries    uint64        `json:"retries"`
	Busy       time.Duration `json:"busy_ns"`
	CommitWait time.Duration `json:"commit_wait_ns"`
	Commit     time.Duration `json:"commit_ns"`
	// DependencyWait is a sum over transactions, not a share of the
	// worker's time: it can exceed the time elapsed.
	DependencyWait time.Duration `json:"dependency_wait_ns"`
}

// Status is what the running process knows of the stream at one moment
// (replicate.Observer.Status). State is one of the State constants but
// StateCutOver.
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
	Snapshot Snapshot
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

// DomainLag is one MariaDB GTID domain's position and lag.
type DomainLag struct {
	Domain uint32        `json:"domain"`
	GTID   string        `json:"gtid"`
	Lag    time.Duration `json:"lag_ns"`
}

// Report is what the running process writes into its stream's row every
// few seconds (binlane.streams.stats) for `binlane status`: its applier's
// counters and its own view of the stream. FromStored reads it back.
type Report struct {
	Snapshot
	State    string `json:"state"`
	Held     string `json:"held,omitempty"`
	Restarts int    `json:"restarts"`
	// Domains: see Status.
	Domains []DomainLag `json:"domains,omitempty"`
}
