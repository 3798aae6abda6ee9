package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// workerConfig is everything a worker uses, passed explicitly.
type workerConfig struct {
	id       int
	pool     *sql.DB
	meta     *sql.DB
	plans    *plan.Builder
	commit   *committer
	abortAll <-chan struct{}
	stats    *Stats
	log      *slog.Logger
	// From the applier's Config.
	collapse     bool
	maxRetries   int
	maxRoundTrip int
	flavor       sqlerr.Flavor
	recoveredDDL position.DDLMark
	copy         Copy
	temps        *tempSessions
	// restore puts the apply session back after a statement ran in its
	// source session's context on the worker's connection.
	restore string
	// jobs and results are the worker's channels from and to the
	// coordinator; renderAhead lets it take and render its next batch
	// while the last round trip of one runs (ahead.go).
	jobs        <-chan *batch
	results     chan<- result
	renderAhead bool
	// pipeline lets the worker send its next batch's first round trip
	// while its last one commits (sendAhead): one worker, rendering ahead,
	// a MariaDB target.
	pipeline bool
}

func (a *Applier) workerConfig(id int, pool *sql.DB, seq *sequencer, abortAll <-chan struct{}) workerConfig {
	return workerConfig{id: id, pool: pool, meta: a.meta, plans: a.plans,
		commit: &committer{seq: seq, stream: a.cfg.Stream, owner: a.cfg.Owner, idleSave: a.cfg.IdleSave, stats: a.stats,
			single: a.cfg.Workers == 1},
		abortAll: abortAll, stats: a.stats, log: a.cfg.Logger,
		collapse:   a.cfg.MaxBatch > 1,
		maxRetries: a.cfg.MaxRetries, flavor: a.cfg.Flavor, recoveredDDL: a.cfg.RecoveredDDL, copy: a.cfg.Copy,
		maxRoundTrip: a.cfg.MaxRoundTrip}
}

// worker applies batches on its own target connection. It owns the
// connection's life cycle and runs what rowsql renders; what it publishes
// for the lock-wait monitor is in the atomic fields.
type worker struct {
	workerConfig
	conn *targetConn
	// guard is sendAhead's buffer for its guard statement.
	guard []byte
	// sql is the writer in use, one of the lanes' (the other renders a
	// batch ahead, see ahead.go).
	sql   *rowsql.Writer
	lanes [2]*lane
	// next is the batch taken ahead, applied after the current one;
	// closed says the coordinator closed jobs meanwhile.
	next   *batch
	closed bool
	// offered is set once the worker offered to take its next batch
	// during the current one (once per batch: see coordinator.report).
	offered bool
	ws      *WorkerStats
	ctx     context.Context // of the batch being applied, for Send
	// infilePrefix names the worker's LOAD DATA files (see targetConn.exec).
	infilePrefix string
	batch        *batch // being applied (owned by the worker goroutine)
	// tempSess is the source session whose connection the worker uses for
	// the transaction it applies (see useTempSession), nil for its own.
	tempSess *tempSession

	// Published for the lock-wait monitor.
	cur         atomic.Pointer[batch]
	execStart   atomic.Int64 // unix ns when the current round trip started; 0 when none runs
	waitingTurn atomic.Bool
	connID      atomic.Int64
	abortMu     sync.Mutex
}

// newWorkers connects the workers, all at once: one after another, 16
// workers took 16 connections' setup before the first transaction.
func (c *coordinator) newWorkers(ctx context.Context, pool *sql.DB, session dsn.Session, renderAhead bool) ([]*worker, error) {
	a := c.a
	workers := make([]*worker, a.cfg.Workers)
	var g errgroup.Group
	for i := range workers {
		wc := a.workerConfig(i, pool, c.seq, c.abortAll)
		wc.temps, wc.restore = c.temps, session.Restore(a.cfg.Flavor == sqlerr.MariaDB)
		wc.jobs, wc.results, wc.renderAhead = c.jobs[i], c.results, renderAhead
		wc.pipeline = renderAhead && a.cfg.Workers == 1 && a.cfg.Flavor == sqlerr.MariaDB
		g.Go(func() (err error) {
			workers[i], err = newWorker(ctx, wc)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, w := range workers {
			if w != nil {
				w.dropConn()
			}
		}
		return nil, err
	}
	return workers, nil
}

func newWorker(ctx context.Context, cfg workerConfig) (*worker, error) {
	w := &worker{workerConfig: cfg, ws: &cfg.stats.Workers[cfg.id], infilePrefix: newInfilePrefix()}
	for i := range w.lanes {
		l := &lane{w: w}
		l.wr = rowsql.NewWriter(l)
		l.wr.Blocks = cfg.flavor == sqlerr.MariaDB
		if cfg.maxRoundTrip > 0 {
			l.wr.MaxRoundTrip = cfg.maxRoundTrip
		}
		w.lanes[i] = l
	}
	w.sql = w.lanes[0].wr
	if err := w.ensureConn(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// loop applies the batches the coordinator hands out until it closes
// jobs, and reports each.
func (w *worker) loop(ctx context.Context) {
	defer w.dropConn()
	for {
		b := w.next
		w.next = nil
		if b == nil {
			var ok bool
			if w.closed {
				return
			}
			if b, ok = <-w.jobs; !ok {
				return
			}
		}
		w.offered = false
		res := w.apply(ctx, b)
		w.dropAhead(b) // rendered ahead, not applied: failed before
		w.results <- res
		if nb := w.next; res.err != nil && nb != nil {
			// Taken ahead of a batch that failed: handed back unapplied
			// (see ahead.go).
			w.next = nil
			w.dropAhead(nb)
			w.stats.AheadGaveWay.Add(1)
			w.results <- result{b: nb, err: errAborted, retry: retryAborted, worker: w.id}
		}
	}
}

// offer tells the coordinator the worker can take its next batch.
func (w *worker) offer() { w.results <- result{worker: w.id, offer: true} }

// apply applies one batch and reports how it went. Failures are sorted by
// what can heal them: a batch rolled back for an earlier one, or one that
// failed while earlier batches were in flight (they may be the cause), runs
// again once they committed; a lost deadlock or lock-wait race runs again a
// bounded number of times; anything else stops the stream with the
// transaction, table and row named.
func (w *worker) apply(ctx context.Context, b *batch) result {
	w.cur.Store(b)
	w.ctx, w.batch = ctx, b
	defer func() {
		w.cur.Store(nil)
		w.batch = nil // it holds the batch's rows
	}()
	res := result{b: b, worker: w.id}
	w.ws.DependencyWait.Add(int64(b.depWait))
	if res.err = w.ensureConn(ctx); res.err != nil {
		return res
	}
	if b.units[0].HeadOnly() {
		if res.err = w.commit.waitTurn(ctx, w, b); res.err != nil {
			if errors.Is(res.err, errAborted) {
				res.retry = retryAborted
			}
			return res
		}
	}
	headAtStart := w.commit.seq.atHead(b.first)
	start := time.Now()
	wait0, commit0 := w.ws.CommitWait.Load(), w.ws.Commit.Load()
	err := w.run(ctx, b)
	// Busy is the time spent applying, without waiting for the commit turn
	// or committing (counted on their own).
	w.ws.Busy.Add(int64(time.Since(start)) - (w.ws.CommitWait.Load() - wait0) - (w.ws.Commit.Load() - commit0))
	w.log.Debug("batch done", "worker", w.id, "conn", w.connID.Load(), "first", b.first, "last", b.last, "err", err)
	if err == nil {
		return res
	}
	w.rollback(ctx)
	res.err = err
	switch {
	case errors.Is(err, errAborted):
		res.retry = retryAborted
	case errors.As(err, new(*builtError)):
		// The chunk committed; building its table's indexes failed.
		res.err = fmt.Errorf("%s: %w", b.describe(), err)
	case errors.Is(err, errStopping), errors.Is(err, txn.ErrStreamBroken), errors.Is(err, ErrCommitUnknown), ctx.Err() != nil:
	case position.IsNotOwner(err):
		res.err = w.notOwner(ctx, b, err)
	case sqlerr.ConnectionLost(err, w.flavor):
		w.dropConn()
	case b.works[0].alone:
		// Statements and transactions sent in parts cannot be re-run from
		// here; their errors name what failed already.
	case !headAtStart && !b.released && (sqlerr.Code(err) != 0 || errors.Is(err, rowsql.ErrRowCount)):
		res.retry = retryDependent
	case b.works[0].chunk != nil && sqlerr.Transient(err) && !w.finalTry(b):
		res.retry = retryTransient
	case b.works[0].chunk != nil:
		// Copied rows the target refuses: the copy and the target disagree
		// (a row already there, a value it cannot hold).
		res.err = fmt.Errorf("%s: %w", b.describe(), err)
	case sqlerr.Transient(err):
		res.retry = retryTransient
		if w.finalTry(b) {
			res.err, res.retry = w.diagnose(ctx, b, err), noRetry
		}
	case sqlerr.Code(err) != 0 || errors.Is(err, rowsql.ErrRowCount):
		res.err = w.recover(ctx, b, err)
	default:
		res.err = fmt.Errorf("%s: %w", b.describe(), err)
	}
	return res
}

// finalTry reports whether a transient failure is the batch's last allowed
// one (the coordinator counts; the worker only reads the count of a batch
// it holds).
func (w *worker) finalTry(b *batch) bool { return b.works[0].tries+1 > w.maxRetries }

// recover handles a server error or row-count mismatch of a batch that was
// first in line: if the target's definition of a table changed, the
// stream restarts from its saved position with fresh plans; otherwise the
// batch is applied again one statement at a time in source order, which
// either commits (a merged statement may fail where the source's order of
// statements does not) or names the transaction, table and row that
// cannot be applied.
func (w *worker) recover(ctx context.Context, b *batch, orig error) error {
	changed, err := w.plans.Reload(ctx, b.tables())
	if err != nil {
		return fmt.Errorf("%s: %w (and reading the target's definitions failed: %v)", b.describe(), orig, err)
	}
	if changed {
		return fmt.Errorf("%s: %w: %w", b.describe(), ErrSchemaChanged, orig)
	}
	return w.diagnose(ctx, b, orig)
}

// notOwner turns a refused position update into the error that names the
// process that owns the stream now.
func (w *worker) notOwner(ctx context.Context, b *batch, err error) error {
	if oerr := position.CheckOwner(ctx, w.meta, w.commit.stream, w.commit.owner); oerr != nil {
		return oerr
	}
	// Still ours: the guard failed instead (a row count); diagnosis names it.
	return w.diagnose(ctx, b, fmt.Errorf("%w: a row statement did not affect the rows it should have", rowsql.ErrRowCount))
}

// rollback ends the open transaction; a connection that cannot even roll
// back is dropped and replaced on the next batch.
func (w *worker) rollback(ctx context.Context) {
	w.sql.Discard()
	if w.conn == nil {
		return
	}
	if err := w.conn.rollback(context.WithoutCancel(ctx)); err != nil {
		w.log.Warn("rollback failed; replacing the connection", "worker", w.id, "conn", w.connID.Load(), "error", err)
		w.dropConn()
	}
}

func (w *worker) dropConn() {
	w.conn.close()
	w.conn = nil
	w.connID.Store(0)
}

// ensureConn replaces a connection that broke on an earlier batch.
func (w *worker) ensureConn(ctx context.Context) error {
	if w.conn != nil {
		return nil
	}
	c, err := openConn(ctx, w.pool)
	if err != nil {
		return err
	}
	w.conn = c
	c.sentAhead = &w.stats.SentAhead
	w.connID.Store(c.id)
	for _, l := range w.lanes {
		l.wr.InfilePrefix, l.wr.JoinBudget = "", 0
		if c.localInfile {
			l.wr.InfilePrefix = w.infilePrefix
		}
		if c.localInfile && w.flavor == sqlerr.MariaDB {
			// CREATE OR REPLACE TEMPORARY TABLE is MariaDB's.
			l.wr.JoinBudget = c.joinBudget
		}
	}
	return nil
}

// run writes and commits a batch.
func (w *worker) run(ctx context.Context, b *batch) error {
	if b.works[0].chunk != nil {
		return w.runChunk(ctx, b)
	}
	if b.works[0].t.XA != nil {
		return w.runXA(ctx, b)
	}
	if wk := b.works[0]; wk.parts != nil || wk.statements {
		return w.runAlone(ctx, b)
	}
	w.sql.Collapse, w.sql.OneByOne, w.sql.Runs = w.collapse, false, true
	return w.write(ctx, b)
}

// write renders every transaction of the batch (unless it was rendered
// ahead) in the writer's mode and commits it.
func (w *worker) write(ctx context.Context, b *batch) error {
	if b.ahead {
		w.sql, b.ahead = w.spare().wr, false
	} else if err := w.render(w.sql, b); err != nil {
		return err
	}
	return w.commit.commit(ctx, w, b, commitOpts{rows: b.rows, ahead: !w.sql.OneByOne})
}

// render writes every transaction of the batch into wr, as one target
// transaction up to its commit.
func (w *worker) render(wr *rowsql.Writer, b *batch) error {
	if err := wr.Begin(); err != nil {
		return err
	}
	b.rows = 0
	for _, wk := range b.works {
		var keys *rowsql.Keys
		if wk.keys.Spans != nil {
			keys = &wk.keys
		}
		if err := wr.Body(wk.t, &wk.body, wk.plans, keys); err != nil {
			return err
		}
		b.rows += countRows(&wk.body)
	}
	return wr.Finish()
}

func countRows(body *txn.Body) int {
	n := 0
	for i := range body.Items {
		if it := &body.Items[i]; it.Kind == txn.ItemRows {
			n += it.Last - it.First
		}
	}
	return n
}

// abortBatch closes b's abort channel once, if b is still the worker's;
// it reports whether it did.
func (w *worker) abortBatch(b *batch) bool {
	w.abortMu.Lock()
	defer w.abortMu.Unlock()
	if w.cur.Load() != b || b.committing.Load() {
		return false
	}
	return closeAbort(b)
}

// closeAbort closes b's abort channel unless it was already; the caller
// holds abortMu.
func closeAbort(b *batch) bool {
	if b.abortOnce {
		return false
	}
	b.abortOnce = true
	close(b.abort)
	return true
}

// abortAhead makes a batch taken ahead give way before it sends anything
// (see coordinator.report), whether or not the worker started it.
func (w *worker) abortAhead(b *batch) {
	w.abortMu.Lock()
	defer w.abortMu.Unlock()
	closeAbort(b)
}

// send runs one round trip (for the lane of the writer in use, which
// checks the row counts).
func (w *worker) send(sqlText []byte, stmts []rowsql.Stmt) ([]int64, error) {
	select {
	case <-w.abortAll:
		return nil, errStopping
	default:
	}
	if b := w.batch; b != nil && !b.committing.Load() {
		select {
		case <-b.abort:
			return nil, errAborted
		default:
		}
		// A chained batch large enough to send rows while it renders.
		if err := w.release(w.ctx, b); err != nil {
			return nil, err
		}
	}
	w.execStart.Store(time.Now().UnixNano())
	counts, err := w.conn.exec(w.ctx, sqlText, stmts, w.batch)
	w.execStart.Store(0)
	return counts, err
}
