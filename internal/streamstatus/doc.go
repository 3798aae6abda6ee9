// Package streamstatus owns the status document of a stream — the one
// JSON schema of `binlane status --json` and of the status page's /status
// (docs/status-json.md) — and the rules read from it: whether a stream is
// alive (/healthz), ready (/readyz), and what a monitoring check says
// (`binlane status --check`, with the monitoring plugins' exit codes).
//
// It builds the document from what the target keeps (binlane.streams, for
// `binlane status`) or from the running process (Status, for the status
// page). It also owns the types the running process fills for that —
// an applier's counters (Snapshot), the process's view (Status), the
// report it stores in its row (Report) — so that their readers (metrics,
// the status page, bench) need not import package apply or replicate. It
// is pure: it must never connect anywhere nor keep state, and never import
// the orchestrators (apply, replicate) that fill its types.
package streamstatus

import (
	"time"
)

// States of a stream in the document.
const (
	StateStarting   = "starting"   // the process has not started applying yet
	StateCopying    = "copying"    // applying, tables still being copied
	StateRunning    = "running"    // applying, behind the source or not known to be caught up
	StateCaughtUp   = "caught_up"  // applying, nothing in flight, the source has nothing more
	StateRestarting = "restarting" // an attempt failed; the next one is on its way
	StatePaused     = "paused"     // holding where a pause request asked (binlane pause, online verify, cutover)
	StateCutOver    = "cut_over"   // cut over by binlane cutover: it must not run again
	StateStopped    = "stopped"    // ended without an error
	StateError      = "error"      // ended by an error
)

// Domain is one MariaDB GTID domain of a stream's position.
type Domain struct {
	Domain uint32 `json:"domain"`
	GTID   string `json:"gtid"`
	// LagSeconds: as the stream's, for the domain (null: unknown).
	LagSeconds *float64 `json:"lag_seconds"`
}

// Stream is the status document of one stream. Fields one source cannot
// know are null: `binlane status` reads the target, the status page the
// running process.
type Stream struct {
	Stream string `json:"stream"`
	State  string `json:"state"`
	// Alive says a binlane process runs the stream now (status: it holds
	// the stream's lock on the target).
	Alive bool `json:"alive"`
	// ReportedAt is when the numbers were taken: the running process's
	// last report (status), or now (status page).
	ReportedAt *time.Time `json:"reported_at"`
	Source     *Source    `json:"source"`
	// Position is the GTID position the target has applied up to.
	Position        string           `json:"position"`
	LastTransaction *LastTransaction `json:"last_transaction"`
	// AppliedTransactions counts every transaction applied since the
	// stream was created (status only).
	AppliedTransactions *uint64 `json:"applied_transactions"`
	// LagSeconds is how far the target is behind the source (null:
	// unknown, such as for a stream no process runs).
	LagSeconds *float64 `json:"lag_seconds"`
	// Domains splits Position and LagSeconds by MariaDB GTID domain when
	// the position has several: each domain commits in its own order.
	Domains []Domain `json:"domains,omitempty"`
	// Held says why binlane's limits hold its work back now ("" when
	// they do not).
	Held string `json:"held"`
	// Restarts counts the attempts the running process retried.
	Restarts *int `json:"restarts"`
	// Run is the running (or last) process's counters.
	Run       *Run        `json:"run"`
	Copy      []CopyTable `json:"copy"`
	Statement *Statement  `json:"statement"`
	LastError *LastError  `json:"last_error"`
	Deferred  []Deferred  `json:"deferred"`
	// Pause is the pause request the stream holds for, or will (null:
	// none).
	Pause *Pause `json:"pause"`
	// Note is what the stream's row says that is not an error: where a
	// cut-over left it, or what prepared it (a reverse stream).
	Note           string          `json:"note"`
	Recommendation *Recommendation `json:"recommendation"`
	// RunBy names the process that runs (or last ran) the stream.
	RunBy  string  `json:"run_by"`
	Health *Health `json:"health"`
}

// Pause is a pause request: the position to hold at ("" for wherever the
// stream stands) and who asked.
type Pause struct {
	At string `json:"at"`
	By string `json:"by"`
}

// Source is the server the stream reads.
type Source struct {
	ID     string `json:"id"` // server uuid, or server_id=N
	Flavor string `json:"flavor"`
}

// LastTransaction is the last transaction applied.
type LastTransaction struct {
	GTID         string     `json:"gtid"`
	BinlogFile   string     `json:"binlog_file"`
	BinlogPos    uint64     `json:"binlog_pos"`
	SourceCommit *time.Time `json:"source_commit"`
}

// Run is what the process's applier did: counters since its attempt
// started, and rates and shares over IntervalSeconds (the last seconds on
// the status page, the whole attempt for status).
type Run struct {
	Started         time.Time `json:"started"`
	IntervalSeconds float64   `json:"interval_seconds"`
	Committed       uint64    `json:"committed"`
	InFlight        int64     `json:"in_flight"`
	Pending         int64     `json:"pending"`
	// Window bounds InFlight (with several threads and no copy the applier
	// sizes it by the threads it keeps busy, unless --window is set;
	// otherwise it is fixed); PeakInFlight is the most InFlight has
	// been in this attempt. 0: not reported (an older binlane).
	Window            int64  `json:"window"`
	PeakInFlight      int64  `json:"peak_in_flight"`
	LockWaitRollbacks uint64 `json:"lock_wait_rollbacks"`
	// RedoneOneByOne counts merged batches the target refused that then
	// committed one statement at a time (each is logged with the error).
	RedoneOneByOne        uint64            `json:"batches_redone_one_by_one"`
	TransactionsPerSecond float64           `json:"transactions_per_second"`
	RowsPerSecond         float64           `json:"rows_per_second"`
	DependencyWait        float64           `json:"dependency_wait"`
	Workers               []Worker          `json:"workers"`
	RanAlone              map[string]uint64 `json:"ran_alone"`
}

// Worker is one applier thread: shares of the interval (Busy,
// CommitWait, Commit and Idle add up to 1; DependencyWait may exceed 1)
// and totals. Commit is the round trip that commits, which at the head of
// the commit order carries the batch's last statements too (with one
// thread, nearly all of them).
type Worker struct {
	Worker         int     `json:"worker"`
	Busy           float64 `json:"busy"`
	DependencyWait float64 `json:"dependency_wait"`
	CommitWait     float64 `json:"commit_wait"`
	Commit         float64 `json:"commit"`
	Idle           float64 `json:"idle"`
	Transactions   uint64  `json:"transactions"`
	Batches        uint64  `json:"batches"`
	Rows           uint64  `json:"rows"`
	Retries        uint64  `json:"retries"`
}

// CopyTable is one table's copy.
type CopyTable struct {
	Table    string `json:"table"` // db.table
	Done     bool   `json:"done"`
	State    string `json:"state"` // copying, indexing (its deferred indexes are being built), done
	Rows     int64  `json:"rows"`
	Estimate int64  `json:"estimate"`
	OnePass  string `json:"one_pass"` // why it is copied in one pass ("": in chunks)
	// DeferredIndexes are the secondary indexes built after the table's
	// rows (--copy-indexes after).
	DeferredIndexes []string `json:"deferred_indexes"`
}

// Statement is a statement (DDL) in progress or failed.
type Statement struct {
	GTID  string `json:"gtid"`
	State string `json:"state"` // running or failed
}

// LastError is the last error that failed an attempt or ended the stream.
type LastError struct {
	Message string     `json:"message"`
	At      *time.Time `json:"at"`
}

// Deferred is a statement kept for cut-over instead of run on the target.
type Deferred struct {
	GTID      string `json:"gtid"`
	Reason    string `json:"reason"`
	Statement string `json:"statement"`
}

// Recommendation is a thread count and the reason for it.
type Recommendation struct {
	Threads int    `json:"threads"`
	Reason  string `json:"reason"`
}

// Health is what /healthz and /readyz answer.
type Health struct {
	Live  Probe `json:"live"`
	Ready Probe `json:"ready"`
	// ReadyMaxLagSeconds is the lag from which the stream is not ready.
	ReadyMaxLagSeconds float64 `json:"ready_max_lag_seconds"`
}

// Probe is one answer.
type Probe struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason"`
}

// Workers computes the workers' shares and totals over iv.
func Workers(iv Interval, totals []WorkerTotals) []Worker {
	out := []Worker{}
	for i, w := range iv.PerWorker {
		o := Worker{Worker: i, Busy: iv.share(w.Busy), DependencyWait: iv.share(w.DependencyWait), CommitWait: iv.share(w.CommitWait),
			Commit: iv.share(w.Commit)}
		if i < len(totals) {
			o.Transactions, o.Batches, o.Rows, o.Retries = totals[i].Transactions, totals[i].Batches, totals[i].Rows, totals[i].Retries
		}
		o.Idle = max(0, 1-o.Busy-o.CommitWait-o.Commit)
		out = append(out, o)
	}
	return out
}

// WorkerTotals are a worker's counters since its attempt started.
type WorkerTotals struct{ Transactions, Batches, Rows, Retries uint64 }

func ptr[T any](v T) *T { return &v }
