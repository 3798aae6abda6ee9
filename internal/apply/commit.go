package apply

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/sqlerr"
)

// committer is the ordered-commit protocol: a batch commits only when
// every earlier batch has (its turn), and its commit carries the stream's
// position after its last transaction, in the same target transaction.
type committer struct {
	seq           *sequencer
	stream, owner string
	idleSave      time.Duration
	stats         *Stats
	// single: one worker applies everything, so no other batch can want
	// the position lock while this one's rows run (see flushFirstBytes).
	single bool
}

// commitOpts says what the commit covers besides rows.
type commitOpts struct {
	rows int
	// force writes the position even when the batch changed nothing on
	// the target (statements: their mark must be cleared).
	force bool
	// clearDDL ends the statement mark.
	clearDDL bool
	// deferred statements are recorded in binlane.deferred with the commit.
	deferred []position.Deferred
	// xaPrepared records, xaFinished forgets, an XA transaction the stream
	// prepared on the target (see runXA).
	xaPrepared, xaFinished string
	// ahead: the worker may take and render its next batch while the
	// last round trip runs (see lastAhead).
	ahead bool
}

// waitTurn blocks until what b must follow committed (b.rule; every
// earlier batch for a batch run at the head), or b must give way.
func (c *committer) waitTurn(ctx context.Context, w *worker, b *batch) error {
	rule := b.rule
	if b.units[0].HeadOnly() {
		rule.all = true
	}
	defer w.waiting()()
	return c.await(ctx, w, b, rule)
}

// await blocks until the batches rule names committed, or b must give way.
func (c *committer) await(ctx context.Context, w *worker, b *batch, rule turnRule) error {
	for {
		ok, changed, err := c.seq.wait(b.first, rule)
		if err != nil || ok {
			return err
		}
		select {
		case <-changed:
		case <-b.abort:
			return errAborted
		case <-w.abortAll:
			return errStopping
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release waits, once, until every batch before a chained batch b
// committed; nothing of b may reach the target before. It holds no lock
// while it waits (nothing was sent), so the lock-wait monitor has no
// reason to roll it back: it is not marked as waiting for its turn.
func (w *worker) release(ctx context.Context, b *batch) error {
	if !b.chained || b.released {
		return nil
	}
	start := time.Now()
	err := w.commit.await(ctx, w, b, turnRule{all: true})
	w.ws.CommitWait.Add(int64(time.Since(start)))
	b.released = err == nil
	return err
}

// waiting marks w as waiting for its commit turn (the lock-wait monitor
// may roll its batch back) until the returned function runs, and counts
// the time as commit wait.
func (w *worker) waiting() (done func()) {
	start := time.Now()
	w.waitingTurn.Store(true)
	return func() {
		w.waitingTurn.Store(false)
		w.ws.CommitWait.Add(int64(time.Since(start)))
	}
}

// lockPosition takes the position lock (see sequencer). Waiting for it
// counts as waiting for the turn: the lock-wait monitor may roll b back
// for an earlier batch that needs one of its row locks.
func (c *committer) lockPosition(ctx context.Context, w *worker, b *batch) error {
	select {
	case c.seq.posLock <- struct{}{}:
		return nil
	default:
	}
	defer w.waiting()()
	select {
	case c.seq.posLock <- struct{}{}:
		return nil
	case <-b.abort:
		return errAborted
	case <-w.abortAll:
		return errStopping
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flushFirstBytes: a batch this large sends its last rows before it takes
// the position lock, and the position and COMMIT in a round trip of their
// own (one more round trip, nothing next to the rows' cost), so that the
// lock does not hold back other workers' commits (of other domains) while
// its rows apply. A single worker has nobody to hold back: it sends its
// rows with the COMMIT. Order entry, pinned, one worker (batches of 1 MiB
// and more): 236 round trips instead of 444, the target's core busy 95% of
// the drain instead of 92-93%.
const flushFirstBytes = 1 << 20

// oneDomainFlushBytes: with several workers, a batch at the head whose GTID
// domain is the only one in flight sends its rows with the COMMIT up to
// this size (a merged batch of the default --max-batch-bytes): only a
// transaction of another domain that arrives meanwhile can wait for its
// lock, for as long as such a batch's rows take. A larger one (a long
// transaction of its own) sends its rows first: another domain's commits
// must not wait for it (TestDomainsCommitIndependently).
const oneDomainFlushBytes = 4 << 20

// flushFirst reports whether a batch sends its rows before it takes the
// position lock (and waits for its turn): when it is not at the head, or
// it is large and another batch could commit while its rows apply.
func flushFirst(atHead bool, bytes int, single, oneDomain bool) bool {
	switch {
	case !atHead:
		return true
	case single || bytes < flushFirstBytes:
		return false
	case oneDomain:
		return bytes > oneDomainFlushBytes
	}
	return true
}

// bytes is the size of the batch's transactions, as the scheduler counts.
func (b *batch) bytes() int {
	n := 0
	for _, u := range b.units {
		n += u.Bytes
	}
	return n
}

// commit waits for the batch's turn, then writes the position (and any
// deferred statements) and commits. When the batch is already at the head,
// the position update and COMMIT ride in the last round trip of statements.
func (c *committer) commit(ctx context.Context, w *worker, b *batch, o commitOpts) error {
	var checkpoints []position.CopyProgress
	for _, wk := range b.works {
		checkpoints = append(checkpoints, wk.checkpoints...)
	}
	onlyBegin := w.sql.RowStatements() == 0 && len(o.deferred) == 0 && len(checkpoints) == 0
	if err := w.release(ctx, b); err != nil {
		return err
	}
	if flushFirst(c.seq.atHead(b.first), b.bytes(), c.single, b.oneDomain) {
		// Not the earliest batch in flight: its rows go before it waits,
		// and never while it holds the position lock. A large batch may
		// send its rows before it takes the lock even at the head, when
		// the lock would hold back another domain's commits while they
		// apply (see flushFirst).
		if !onlyBegin {
			if err := w.sql.Flush(); err != nil {
				return err
			}
		}
		if err := c.waitTurn(ctx, w, b); err != nil {
			return err
		}
	}
	if err := c.lockPosition(ctx, w, b); err != nil {
		return err
	}
	unlock := func() { <-c.seq.posLock }
	if _, err := c.seq.ready(b.first, b.rule); err != nil {
		unlock()
		return err // broken while this batch waited for the lock
	}
	b.committing.Store(true)
	pos, save := c.seq.next(b.works)
	save.ClearDDL = o.clearDDL
	if onlyBegin && !o.force && time.Since(c.seq.lastSave) < c.idleSave {
		// Only skipped transactions: no round trip; the position is written
		// with the next commit or by the coordinator when idle.
		w.sql.Discard()
		c.seq.commit(pos, save, false)
		c.stats.setPosition(save.GTID)
		c.done(w, b, o.rows)
		unlock()
		return nil
	}
	tail := &position.Tail{Stream: c.stream, Owner: c.owner, Save: save, Deferred: o.deferred, Copy: checkpoints,
		XAPrepared: o.xaPrepared, XAFinished: o.xaFinished}
	if tail.XAPrepared != "" {
		tail.XAPreparedGTID = b.works[0].t.GTID.String()
	}
	wr := w.sql
	last := func() error {
		start := time.Now()
		if err := wr.Commit(tail); err != nil {
			if outcomeUnknown(err) {
				// No answer from the server: the COMMIT may have happened. A
				// later batch writing the position without this one's GTIDs
				// could lose them (see sequencer): broken before the lock
				// goes.
				c.seq.breakOff(err)
				w.log.Warn("the outcome of a commit is unknown: nothing may commit after it", "batch", b.describe(), "error", err)
			}
			unlock()
			return err
		}
		w.ws.Commit.Add(int64(time.Since(start)))
		c.seq.commit(pos, save, true)
		c.stats.setPosition(save.GTID)
		woke := c.done(w, b, o.rows)
		unlock()
		if woke {
			// A batch waited for this commit: it sends now. This
			// goroutine's next steps (waking its worker, the report, the
			// coordinator) would otherwise run first, and the woken one
			// after everything runnable, when binlane has one core. Not
			// when nobody waited: one worker's next batch waits for this
			// goroutine's own signal, which a yield would put last
			// (pinned, one worker: 6-11% slower).
			runtime.Gosched()
		}
		return nil
	}
	if !o.ahead {
		return last()
	}
	return w.lastAhead(ctx, last, tail)
}

// outcomeUnknown reports whether a COMMIT that failed with err may have
// happened: no answer from the server. A server error or a row count is an
// answer (rolled back), and errStopping and errAborted come before
// anything is sent (see worker.send).
func outcomeUnknown(err error) bool {
	return sqlerr.Code(err) == 0 && !errors.Is(err, rowsql.ErrRowCount) &&
		!errors.Is(err, errStopping) && !errors.Is(err, errAborted)
}

// done passes the turn on and counts the batch; it reports whether a
// batch waiting for its turn was woken.
func (c *committer) done(w *worker, b *batch, rows int) (woke bool) {
	woke = c.seq.advance(b.first, b.last)
	txns := 0
	for _, wk := range b.works {
		if wk.chunk == nil {
			txns++
		}
	}
	w.ws.Batches.Add(1)
	w.ws.Txns.Add(uint64(txns))
	w.ws.Rows.Add(uint64(rows))
	c.stats.Committed.Add(uint64(txns))
	c.stats.LastCommitAt.Store(time.Now().UnixNano())
	if ts := b.works[len(b.works)-1].t.Timestamp; ts != 0 {
		c.stats.LastCommitTS.Store(int64(ts))
	}
	return woke
}
