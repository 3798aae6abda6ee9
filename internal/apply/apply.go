// Package apply writes source transactions into the target with N
// workers: the coordinator analyses each transaction (table plans,
// writeset), feeds the scheduler's dependency graph and hands ready batches
// to workers; each worker applies a batch on its own connection as one
// target transaction and commits it strictly in source order, with the
// stream's position updated in that same transaction.
//
// Goroutines and teardown: Run starts the workers and the lock-wait
// monitor, then loops in the coordinator. When the input channel closes
// (graceful stop) it dispatches what it holds, waits for every batch to
// commit and returns nil; when a batch fails for good it stops
// dispatching, makes every worker roll back what has not committed, and
// returns the first error; a transaction that cannot even be planned (a
// table missing on the target) stops intake instead, and the error is
// returned once the transactions before it committed. The saved position
// never moves past the last ordered commit.
//
// The package must never commit out of order, never skip a transaction,
// and never apply one twice.
package apply

import (
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// Config configures an Applier.
type Config struct {
	Stream string // the stream's name in binlane.streams
	// Owner is this run's token in binlane.streams.owner; position updates
	// fail once another run took the stream over.
	Owner string
	// Target is the target's connection configuration.
	Target  *mysql.Config
	Workers int
	Mode    scheduler.Mode
	// MaxBatch bounds how many source transactions one target transaction
	// merges; 1 disables merging. MaxBatchBytes bounds their size.
	MaxBatch      int
	MaxBatchBytes int
	// Window bounds the transactions in flight (count and bytes).
	Window      int
	WindowBytes int
	// BinlogApplied keeps sql_log_bin on for applied changes, so the
	// target can have replicas of its own.
	BinlogApplied bool
	// LockWaitTimeout is the target's innodb_lock_wait_timeout for our
	// sessions (seconds): a backstop behind the lock-wait monitor.
	LockWaitTimeout int
	// LockProbe is how long a statement may run before the monitor asks
	// the target who blocks it.
	LockProbe time.Duration
	// MaxRetries bounds how often a batch is rolled back and re-run.
	MaxRetries int
	// IdleSave is how often the position of skipped (empty) transactions is
	// written when nothing else commits.
	IdleSave time.Duration
	// RecoveredDDL is the GTID of a statement that was running when the
	// previous run stopped: if it fails as "already done", it was.
	RecoveredDDL string
	Logger       *slog.Logger
}

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 1
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = 4 << 20
	}
	if c.Window <= 0 {
		c.Window = max(64, c.Workers*c.MaxBatch*4)
	}
	if c.WindowBytes <= 0 {
		c.WindowBytes = 256 << 20
	}
	if c.LockWaitTimeout <= 0 {
		c.LockWaitTimeout = 20
	}
	if c.LockProbe <= 0 {
		c.LockProbe = 50 * time.Millisecond
	}
	if c.MaxRetries <= 0 {
		c.MaxRetries = 20
	}
	if c.IdleSave <= 0 {
		c.IdleSave = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Start is where the applier begins: the saved position and the Seq the
// first transaction will carry.
type Start struct {
	GTID     gtid.Set
	File     string
	Pos      uint64
	FirstSeq uint64
}

// Applier applies transactions. Create it with New, run it once.
type Applier struct {
	cfg     Config
	plans   *plan.Builder
	meta    *sql.DB // metadata reads, idle position saves, state
	stats   *Stats
	log     *slog.Logger
	collaps bool
}

// New returns an applier; plans reads target metadata, meta is a pool for
// the coordinator's own statements.
func New(cfg Config, plans *plan.Builder, meta *sql.DB) *Applier {
	cfg.defaults()
	return &Applier{cfg: cfg, plans: plans, meta: meta, stats: newStats(cfg.Workers), log: cfg.Logger,
		collaps: cfg.MaxBatch > 1}
}

// Stats returns the live counters.
func (a *Applier) Stats() *Stats { return a.stats }

// work is one transaction with what the coordinator worked out about it.
type work struct {
	t     *txn.Txn
	plans []*plan.Table // per item; nil for statements
	set   writeset.Set
	unit  scheduler.Unit
	ddl   bool // holds intake until committed (statements, streamed)
	added time.Time
	tries int
}

// batch is what one worker applies as one target transaction.
type batch struct {
	units []*scheduler.Unit
	works []*work
	first uint64
	last  uint64
	tries int
	// abort is closed by the lock-wait monitor when this batch blocks an
	// earlier one; the worker then rolls back and the batch is re-run.
	abort     chan struct{}
	abortOnce bool
}

// result is a worker's report on a batch.
type result struct {
	b      *batch
	err    error
	retry  bool
	worker int
}

// errAborted marks a batch rolled back on purpose (lock-wait monitor).
var errAborted = errors.New("rolled back to let an earlier transaction through")

func (b *batch) describe() string {
	if len(b.works) == 1 {
		return "transaction " + describeTxn(b.works[0].t)
	}
	return fmt.Sprintf("transactions %s .. %s", describeTxn(b.works[0].t), describeTxn(b.works[len(b.works)-1].t))
}

func describeTxn(t *txn.Txn) string {
	if t.GTID.Flavor != 0 {
		return fmt.Sprintf("%s (source %s:%d)", t.GTID, t.File, t.EndPos)
	}
	return fmt.Sprintf("at source %s:%d", t.File, t.EndPos)
}
