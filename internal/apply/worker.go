package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// worker applies batches on its own target connection.
type worker struct {
	id       int
	a        *Applier
	pool     *sql.DB
	conn     *targetConn
	seq      *sequencer
	abortAll <-chan struct{}
	stats    *WorkerStats
	w        orderedWriter
	sw       sqlWriter
	col      collapser
	ctx      context.Context // of the batch being applied, for flush
	rows     int

	// Published for the lock-wait monitor.
	cur         atomic.Pointer[batch]
	execStart   atomic.Int64 // unix ns when the current round trip started; 0 when none runs
	waitingTurn atomic.Bool
	connID      atomic.Int64
	abortMu     sync.Mutex
}

// errStreamAborted: the source stopped before the end of a streamed
// transaction, which was rolled back.
var errStreamAborted = errors.New("the source stopped in the middle of a streamed transaction")

// errStopping: another batch failed; this one was rolled back.
var errStopping = errors.New("stopping after an error elsewhere")

func (a *Applier) newWorker(ctx context.Context, id int, pool *sql.DB, seq *sequencer) (*worker, error) {
	w := &worker{id: id, a: a, pool: pool, seq: seq, stats: &a.stats.Workers[id]}
	w.w.sqlWriter = &w.sw
	w.sw.flush = w.flush
	if err := w.ensureConn(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// apply applies one batch and reports how it went.
func (w *worker) apply(ctx context.Context, b *batch) result {
	w.cur.Store(b)
	defer w.cur.Store(nil)
	w.ctx = ctx
	if err := w.ensureConn(ctx); err != nil {
		return result{b: b, err: err, worker: w.id}
	}
	if b.units[0].HeadOnly() {
		if err := w.waitTurn(ctx, b); err != nil {
			return result{b: b, err: err, retry: errors.Is(err, errAborted), worker: w.id}
		}
	}
	headAtStart := w.seq.atHead(b.first)
	start := time.Now()
	err := w.run(ctx, b)
	w.stats.Busy.Add(int64(time.Since(start)))
	w.a.log.Debug("batch done", "worker", w.id, "conn", w.connID.Load(), "first", b.first, "last", b.last, "err", err)
	if err == nil {
		return result{b: b, worker: w.id}
	}
	w.rollback(ctx)
	switch {
	case errors.Is(err, errAborted), transient(err):
		return result{b: b, err: err, retry: true, worker: w.id}
	case errors.Is(err, errStopping), errors.Is(err, errStreamAborted), ctx.Err() != nil:
		return result{b: b, err: err, worker: w.id}
	case position.IsNotOwner(err) && w.lostStream(ctx):
		return result{b: b, err: position.ErrNotOwner, worker: w.id}
	case !headAtStart && (serverCode(err) != 0 || errors.Is(err, errRowCount)):
		// An earlier transaction was still in flight: it may be the cause.
		return result{b: b, err: err, retry: true, worker: w.id}
	case serverCode(err) != 0 || errors.Is(err, errRowCount):
		if derr := w.diagnose(ctx, b, err); derr != nil {
			return result{b: b, err: derr, worker: w.id}
		}
		return result{b: b, err: err, retry: true, worker: w.id}
	}
	return result{b: b, err: fmt.Errorf("%s: %w", b.describe(), err), worker: w.id}
}

// rollback ends the open transaction; a connection that cannot even roll
// back is dropped and replaced on the next batch.
func (w *worker) rollback(ctx context.Context) {
	if w.conn == nil {
		return
	}
	if err := w.conn.rollback(context.WithoutCancel(ctx)); err != nil {
		w.a.log.Warn("rollback failed; replacing the connection", "worker", w.id, "conn", w.connID.Load(), "error", err)
		w.dropConn()
	}
}

func (w *worker) dropConn() {
	w.conn.close()
	w.conn = nil
	w.connID.Store(0)
}

// lostStream reports whether another process owns the stream now.
func (w *worker) lostStream(ctx context.Context) bool {
	var owner string
	err := w.a.meta.QueryRowContext(ctx, "SELECT owner FROM "+position.Table+" WHERE name = ?", w.a.cfg.Stream).Scan(&owner)
	return err == nil && owner != w.a.cfg.Owner
}

// ensureConn replaces a connection that broke on an earlier batch.
func (w *worker) ensureConn(ctx context.Context) error {
	if w.conn != nil {
		return nil
	}
	c, err := openConn(ctx, w.pool, w.a.cfg.BinlogApplied, w.a.cfg.LockWaitTimeout)
	if err != nil {
		return err
	}
	w.conn = c
	w.connID.Store(c.id)
	return nil
}

// run writes and commits a batch.
func (w *worker) run(ctx context.Context, b *batch) error {
	if len(b.works) == 1 && b.works[0].ddl {
		return w.runAlone(ctx, b)
	}
	w.sw.reset()
	w.rows = 0
	if err := w.sw.beginTxn(); err != nil {
		return err
	}
	collapse := w.a.collaps
	w.col.reset()
	for _, wk := range b.works {
		if err := w.writeBody(ctx, wk.t, &wk.t.Body, wk.plans, collapse); err != nil {
			return err
		}
	}
	if err := w.finishStatements(collapse); err != nil {
		return err
	}
	return w.commit(ctx, b, false)
}

// writeBody writes the row changes of one transaction body. plans may be
// nil (streamed and statement transactions): they are then looked up now,
// after any statement before them ran.
func (w *worker) writeBody(ctx context.Context, t *txn.Txn, body *txn.Body, plans []*plan.Table, collapse bool) error {
	for i := range body.Items {
		it := &body.Items[i]
		var p *plan.Table
		if plans != nil {
			p = plans[i]
		} else {
			var err error
			if p, err = w.a.plans.Get(ctx, it.Rows.Table); err != nil {
				return err
			}
		}
		for j := it.First; j < it.Last; j++ {
			c := &body.Changes[j]
			if collapse && p.Collapsible {
				w.col.add(t, p, c)
				continue
			}
			if err := w.w.change(t, p, c); err != nil {
				return err
			}
		}
		w.rows += it.Last - it.First
	}
	return nil
}

// finishStatements closes open statements and writes collapsed rows.
func (w *worker) finishStatements(collapse bool) error {
	if err := w.w.close(); err != nil {
		return err
	}
	if collapse {
		if err := w.col.write(&w.w); err != nil {
			return err
		}
	}
	return w.sw.restoreSession()
}

// commit waits for the batch's turn, then writes the position and commits.
// When the batch is already at the head, the position update and COMMIT
// ride in the last round trip of statements.
func (w *worker) commit(ctx context.Context, b *batch, force bool) error {
	onlyBegin := w.sw.dml == 0
	if !w.seq.atHead(b.first) {
		if !onlyBegin {
			if err := w.sw.send(); err != nil {
				return err
			}
		}
		if err := w.waitTurn(ctx, b); err != nil {
			return err
		}
	}
	pos, save := w.seq.next(b.works)
	if onlyBegin && !force && time.Since(w.seq.lastSave) < w.a.cfg.IdleSave {
		// Only skipped transactions: no round trip; the position is written
		// with the next commit or by the coordinator when idle.
		w.sw.reset()
		w.seq.commit(pos, save, false)
		w.done(b)
		return nil
	}
	start := time.Now()
	w.sw.begin()
	w.sw.buf = position.AppendUpdate(w.sw.buf, w.a.cfg.Stream, save, w.a.cfg.Owner, guardVar)
	if err := w.sw.end(stmtInfo{expect: 1, what: "position update"}); err != nil {
		return err
	}
	if err := w.sw.raw("COMMIT"); err != nil {
		return err
	}
	if err := w.sw.send(); err != nil {
		return err
	}
	w.stats.Commit.Add(int64(time.Since(start)))
	w.seq.commit(pos, save, true)
	w.done(b)
	return nil
}

// done passes the turn on and counts the batch.
func (w *worker) done(b *batch) {
	w.seq.advance(b.last)
	w.stats.Batches.Add(1)
	w.stats.Txns.Add(uint64(len(b.works)))
	w.stats.Rows.Add(uint64(w.rows))
	st := w.a.stats
	st.Committed.Add(uint64(len(b.works)))
	st.LastCommitAt.Store(time.Now().UnixNano())
	if ts := b.works[len(b.works)-1].t.Timestamp; ts != 0 {
		st.LastCommitTS.Store(int64(ts))
	}
}

// waitTurn blocks until every earlier batch committed, or the batch must
// give way.
func (w *worker) waitTurn(ctx context.Context, b *batch) error {
	start := time.Now()
	w.waitingTurn.Store(true)
	defer func() {
		w.waitingTurn.Store(false)
		w.stats.CommitWait.Add(int64(time.Since(start)))
	}()
	select {
	case <-w.seq.turn(b.first):
		return nil
	case <-b.abort:
		return errAborted
	case <-w.abortAll:
		return errStopping
	case <-ctx.Done():
		return ctx.Err()
	}
}

// abortBatch closes b's abort channel once, if b is still the worker's;
// it reports whether it did.
func (w *worker) abortBatch(b *batch) bool {
	w.abortMu.Lock()
	defer w.abortMu.Unlock()
	if w.cur.Load() != b || b.abortOnce {
		return false
	}
	b.abortOnce = true
	close(b.abort)
	return true
}

// errRowCount reports a statement that did not affect the rows it should
// have (a row missing on the target, or there twice).
var errRowCount = errors.New("row count mismatch")

// flush sends one round trip and checks every statement's row count.
func (w *worker) flush(sqlText []byte, stmts []stmtInfo) error {
	select {
	case <-w.abortAll:
		return errStopping
	default:
	}
	if b := w.cur.Load(); b != nil {
		select {
		case <-b.abort:
			return errAborted
		default:
		}
	}
	w.execStart.Store(time.Now().UnixNano())
	counts, err := w.conn.exec(w.ctx, sqlText)
	w.execStart.Store(0)
	if err != nil {
		// A round trip of one row statement (diagnosis sends them so, each
		// with its row-count check) failed in that statement.
		if n := len(stmts); stmts[0].txn != nil && (n == 1 || n == 2 && stmts[1].what == rowCountCheck) {
			return &stmtError{info: stmts[0], err: err}
		}
		return err
	}
	for i, st := range stmts {
		if st.expect < 0 || i >= len(counts) || counts[i] == st.expect {
			continue
		}
		return &rowCountError{info: st, got: counts[i]}
	}
	return nil
}

type rowCountError struct {
	info stmtInfo
	got  int64
}

func (e *rowCountError) Error() string {
	return fmt.Sprintf("%s affected %d rows on the target, expected %d", e.info.what, e.got, e.info.expect)
}

func (e *rowCountError) Unwrap() error { return errRowCount }
