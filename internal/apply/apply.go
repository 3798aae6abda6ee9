// Package apply writes source transactions into the target with N
// workers: the coordinator analyses each transaction (table plans,
// writeset), feeds the scheduler's dependency graph and hands ready batches
// to workers; each worker renders a batch (rowsql) and applies it on its own
// connection as one target transaction, committed strictly in source order
// with the stream's position in that same transaction (the commit protocol:
// committer). Statements (DDL, and row changes a session logged as
// statements: statementdml.go) and transactions too large to hold run
// alone, the latter in parts relayed by the coordinator as they arrive. A
// source session's temporary tables live on a target connection of that
// session's own while the run lasts (tempsessions.go). How many
// transactions the scheduler holds follows the workers kept busy
// (window.go).
//
// Goroutines and teardown: Run starts the workers and the lock-wait
// monitor, then loops in the coordinator, the only goroutine that touches
// the scheduler. When the input closes (graceful stop) it dispatches what it
// holds, waits for every batch to commit and returns nil; when a batch fails
// for good it stops dispatching, makes every worker roll back what has not
// committed, and returns the first error; a transaction that cannot even be
// planned (a table missing on the target) stops intake instead, and the
// error is returned once the transactions before it committed. The saved
// position never moves past the last ordered commit.
//
// The package must never commit out of order, never skip a transaction,
// and never apply one twice.
package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// Config configures an Applier.
type Config struct {
	Stream string // the stream's name in binlane.streams
	// Owner is this run's token in binlane.streams.owner; position updates
	// fail once another run took the stream over.
	Owner string
	// Target is the target's address; Flavor the target's server flavor
	// (error codes differ).
	Target  dsn.DSN
	Flavor  sqlerr.Flavor
	Workers int
	Mode    scheduler.Mode
	// MaxBatch bounds how many source transactions one target transaction
	// merges; 1 disables merging. MaxBatchBytes bounds their size.
	MaxBatch      int
	MaxBatchBytes int
	// MaxRoundTrip bounds the SQL text of one round trip (0:
	// rowsql.DefaultMaxRoundTrip).
	MaxRoundTrip int
	// Window bounds the transactions in flight (count and bytes). When
	// Window is not set, the applier derives the bound from the workers
	// and the batch size and, outside a copy, sizes it as it goes by the
	// workers kept busy (window.go).
	Window      int
	WindowBytes int
	// adaptWindow: Window was derived, and is sized as the applier goes.
	adaptWindow bool
	// SkipBinlog keeps applied changes out of the target's binlog
	// (sql_log_bin=0, which needs SUPER or BINLOG ADMIN); by default the
	// target binlogs them, so it can have replicas of its own.
	SkipBinlog bool
	// LockWaitTimeout is the target's innodb_lock_wait_timeout for our
	// sessions (seconds): a backstop behind the lock-wait monitor.
	LockWaitTimeout int
	// LockProbe is how long a statement may run before the monitor asks
	// the target who blocks it; BlindAfter how long the batch next in
	// commit order may run before later ones are rolled back when the
	// monitor cannot ask (no PROCESS privilege).
	LockProbe  time.Duration
	BlindAfter time.Duration
	// MaxRetries bounds how often a batch that failed while nothing earlier
	// was in flight (so the failure is its own) is re-run.
	MaxRetries int
	// IdleSave is how often the position of skipped (empty) transactions is
	// written when nothing else commits.
	IdleSave time.Duration
	// RecoveredDDL is the statement mark the previous run left: a
	// statement that was running when it stopped (see statements.go).
	RecoveredDDL position.DDLMark
	// Source tells which source tables are transactional, for transactions
	// with ROLLBACK TO SAVEPOINT (nil: such transactions are an error).
	Source SourceTables
	// Copy is the copy running in the stream (nil when none).
	Copy Copy
	// MaxChunkWrites bounds the copied chunks written at once (0: no
	// bound): more concurrent inserts than the target has cores cost
	// InnoDB more in contention than they gain.
	MaxChunkWrites int
	// NoRenderAhead: a worker renders its next batch only once the one
	// before committed (see ahead.go).
	NoRenderAhead bool
	Logger        *slog.Logger
}

// SourceTables describes the source's tables.
type SourceTables interface {
	// Transactional reports whether a table's engine can roll back on the
	// source.
	Transactional(ctx context.Context, tm *binlog.TableMap) (bool, error)
	// HasTriggers reports whether a table has triggers on the source (false
	// for one that does not exist there); StoredFunction whether a name is
	// a stored function there. Statement-logged DML needs both.
	HasTriggers(ctx context.Context, schema, table string) (bool, error)
	StoredFunction(ctx context.Context, schema, name string) (bool, error)
	// UnsafeDefault names a column of a source table whose DEFAULT the
	// target would evaluate as its own (UUID(), ...), and the call ("": none).
	UnsafeDefault(ctx context.Context, schema, table string) (column, call string, err error)
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
	if c.MaxRoundTrip <= 0 {
		c.MaxRoundTrip = rowsql.DefaultMaxRoundTrip
	}
	if c.Window <= 0 {
		c.adaptWindow = c.Copy == nil && c.Workers > 1
		c.Window = scheduler.DefaultWindow(c.Workers, c.MaxBatch)
	}
	if c.WindowBytes <= 0 {
		c.WindowBytes = 128 << 20
	}
	if c.LockWaitTimeout <= 0 {
		c.LockWaitTimeout = 20
	}
	if c.LockProbe <= 0 {
		c.LockProbe = 50 * time.Millisecond
	}
	if c.BlindAfter <= 0 {
		c.BlindAfter = time.Second
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
	// Ready, when set, is called once the workers' connections are open,
	// before the first transaction is taken: the producer of the input may
	// wait for it (see replica.Open, which reads nothing before it is asked).
	Ready func()
}

// Applier applies transactions. Create it with New, run it once.
type Applier struct {
	cfg   Config
	plans *plan.Builder
	meta  *sql.DB // metadata reads, idle position saves, state
	stats *Stats
}

// New returns an applier; plans reads target metadata, meta is a pool for
// the coordinator's own statements.
func New(cfg Config, plans *plan.Builder, meta *sql.DB) *Applier {
	cfg.defaults()
	return &Applier{cfg: cfg, plans: plans, meta: meta, stats: newStats(cfg.Workers)}
}

// Stats returns the live counters.
func (a *Applier) Stats() *Stats { return a.stats }

// work is one transaction with what the coordinator worked out about it.
type work struct {
	t     *txn.Txn
	body  txn.Body         // the whole transaction, or its first part
	plans []*plan.Table    // per item of body; nil for items that are not rows
	parts chan txn.Part    // the later parts of a transaction sent in parts
	set   scheduler.KeySet // what it writes
	// keys locates each change's keys in set (Spans nil: not computed, or
	// coarsened), for the run planner (rowsql.Keys).
	keys  rowsql.Keys
	unit  scheduler.Unit // its node in the dependency graph
	alone bool           // applied on its own: statements, sent in parts, savepoints, XA
	// barrier is set when it also runs with nothing else in flight (intake
	// waits for it): all but a transaction sent in parts.
	barrier bool
	// statements is set when the body has statements (DDL, deferred).
	statements bool
	added      time.Time
	tries      int // failures of its own while first in line (coordinator only)
	// chunk is set for copied rows (t then only carries the Seq); skip
	// says they are not written. checkpoints are the copy's progress the
	// work's commit records (chunks, statements that replace tables).
	chunk       *txn.Chunk
	skip        bool
	checkpoints []position.CopyProgress
	// builds are the deferred indexes a copy builds before the work's
	// statements run (see Copy.Statement).
	builds []*txn.IndexBuild
	// What its commit follows (see turnRule): every earlier unit, or the
	// previous unit of its GTID domain and the previous Ordered unit (Seqs;
	// 0 for none).
	afterAll                  bool
	afterDomain, afterOrdered uint64
}

// batch is what one worker applies as one target transaction.
type batch struct {
	units []*scheduler.Unit
	works []*work
	first uint64
	last  uint64
	// abort is closed by the lock-wait monitor when this batch blocks an
	// earlier one; the worker then rolls back and the batch is re-run.
	abort     chan struct{}
	abortOnce bool
	// depWait sums its transactions' waits in the scheduler, counted to
	// the worker that takes it.
	depWait time.Duration
	// rule is what it must follow to commit.
	rule turnRule
	// chained: handed out before what it depends on committed (see
	// scheduler.Config.Chain). Its worker renders it at once and sends
	// nothing before every earlier batch committed (released).
	chained, released bool
	// oneDomain: when it was handed out, no other GTID domain had
	// transactions in flight and no copy ran: its position lock can hold
	// back only a transaction of another domain that arrives meanwhile
	// (see oneDomainFlushBytes).
	oneDomain bool
	// committing is set once the batch holds the position lock with its
	// turn come: nothing waits for it to give way any more, and an abort
	// then (the lock-wait monitor acts on what it read a moment before,
	// when the connection may have run an earlier batch) is ignored. Its
	// last round trip, interrupted, would leave the commit's outcome
	// unknown to every later batch.
	committing atomic.Bool
	// ahead: rendered ahead into its worker's spare writer (ahead.go);
	// rows is the row changes rendered.
	ahead bool
	rows  int
}

// result is a worker's report on a batch.
type result struct {
	b      *batch
	err    error
	retry  retryKind
	worker int
	// offer: not a report; the worker can take its next batch now,
	// before it reports the one it has (see ahead.go).
	offer bool
}

// retryKind says why a batch is re-run.
type retryKind uint8

const (
	noRetry retryKind = iota
	// retryAborted: rolled back on purpose to let an earlier batch through.
	retryAborted
	// retryDependent: failed while earlier batches were still in flight,
	// which may have caused the failure; re-run once they committed. Not
	// counted against MaxRetries.
	retryDependent
	// retryTransient: lost a deadlock or lock-wait race on its own.
	retryTransient
)

// errAborted marks a batch rolled back on purpose (lock-wait monitor).
var errAborted = errors.New("rolled back to let an earlier transaction through")

// ErrSchemaChanged reports that a target table's definition changed under
// the stream: the transactions in flight were planned for the old one, so
// the stream restarts from its saved position.
var ErrSchemaChanged = errors.New("a target table's definition changed while replicating")

func (b *batch) describe() string {
	if len(b.works) == 1 && b.works[0].chunk != nil {
		return describeChunk(b.works[0].chunk)
	}
	if len(b.works) == 1 {
		return "transaction " + b.works[0].t.Describe()
	}
	return fmt.Sprintf("transactions %s .. %s", b.works[0].t.Describe(), b.works[len(b.works)-1].t.Describe())
}

// tables returns the plans the batch's transactions use.
func (b *batch) tables() []*plan.Table {
	seen := map[*plan.Table]bool{}
	var out []*plan.Table
	for _, w := range b.works {
		for _, p := range w.plans {
			if p != nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}
