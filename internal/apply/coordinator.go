package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// coordinator is the single goroutine that owns the scheduler.
type coordinator struct {
	a        *Applier
	sched    *scheduler.Scheduler
	seq      *sequencer
	jobs     chan *batch
	results  chan result
	abortAll chan struct{}
	ws       writeset.Builder
	busy     int // batches handed to workers without a result yet
	ddl      int // statement or streamed transactions in flight: intake waits
	firstErr error
	// addErr is a transaction that could not even be analysed (no plan for
	// a table): intake stops there, but the transactions before it are
	// sound and still commit, so the stream stops right before it.
	addErr error
}

// Run applies the transactions received on in until in is closed (then it
// finishes what it holds and returns nil) or a transaction fails (then it
// rolls back everything not committed and returns the error). ctx ends
// everything at once.
func (a *Applier) Run(ctx context.Context, in <-chan *txn.Txn, start Start) error {
	pool, err := OpenPool(a.cfg.Target, a.cfg.Workers+2)
	if err != nil {
		return err
	}
	defer pool.Close()
	seq := newSequencer(start.FirstSeq-1, start.GTID, start.File, start.Pos)
	workers := make([]*worker, a.cfg.Workers)
	for i := range workers {
		if workers[i], err = a.newWorker(ctx, i, pool, seq); err != nil {
			for _, w := range workers[:i] {
				w.dropConn()
			}
			return err
		}
	}
	c := &coordinator{a: a, seq: seq,
		sched: scheduler.New(scheduler.Config{Mode: a.cfg.Mode, MaxUnits: a.cfg.Window, MaxBytes: a.cfg.WindowBytes,
			MaxBatch: a.cfg.MaxBatch, MaxBatchBytes: a.cfg.MaxBatchBytes}, start.FirstSeq),
		jobs: make(chan *batch, a.cfg.Workers), results: make(chan result, a.cfg.Workers),
		abortAll: make(chan struct{})}
	var wg sync.WaitGroup
	for _, w := range workers {
		w.abortAll = c.abortAll
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.dropConn()
			for b := range c.jobs {
				c.results <- w.apply(ctx, b)
			}
		}()
	}
	monCtx, stopMonitor := context.WithCancel(ctx)
	mon := newLockMonitor(a, pool, workers)
	wg.Add(1)
	go func() {
		defer wg.Done()
		mon.run(monCtx)
	}()
	err = c.loop(ctx, in)
	close(c.jobs)
	stopMonitor()
	wg.Wait()
	return err
}

// loop is the coordinator's event loop.
func (c *coordinator) loop(ctx context.Context, in <-chan *txn.Txn) error {
	ticker := time.NewTicker(c.a.cfg.IdleSave)
	defer ticker.Stop()
	inClosed := false
	for {
		c.dispatch()
		units, pending := c.sched.InFlight()
		c.a.stats.InFlight.Store(int64(units))
		c.a.stats.Pending.Store(int64(pending))
		if c.busy == 0 && (c.firstErr != nil || (inClosed || c.addErr != nil) && units == 0) {
			if c.firstErr != nil && !errors.Is(c.firstErr, errStopped) {
				return c.firstErr
			}
			if err := c.saveIdle(ctx, true); err != nil || c.addErr == nil {
				return err
			}
			return c.addErr
		}
		var intake <-chan *txn.Txn
		if !inClosed && c.firstErr == nil && c.addErr == nil && c.ddl == 0 && !c.sched.Full() {
			intake = in
		}
		select {
		case t, ok := <-intake:
			if !ok {
				inClosed = true
				continue
			}
			if err := c.add(ctx, t); err != nil {
				c.addErr = err
			}
		case r := <-c.results:
			c.busy--
			c.handle(r, inClosed)
		case <-ticker.C:
			if c.busy == 0 && c.firstErr == nil {
				if err := c.saveIdle(ctx, false); err != nil {
					c.fail(err)
				}
			}
		case <-ctx.Done():
			c.fail(ctx.Err())
		}
	}
}

func (c *coordinator) fail(err error) {
	if c.firstErr == nil {
		c.firstErr = err
		close(c.abortAll)
	}
}

// add analyses a transaction and puts it into the scheduler.
func (c *coordinator) add(ctx context.Context, t *txn.Txn) error {
	w := &work{t: t, added: time.Now()}
	u := &w.unit
	u.Seq, u.Payload, u.Bytes = t.Seq, w, t.Bytes+256
	u.Domain, u.CommitID, u.File = t.GTID.Domain, t.CommitID, t.File
	u.LastCommitted, u.SequenceNumber = t.LastCommitted, t.SequenceNumber
	switch {
	case t.More != nil:
		u.Barrier, w.ddl = true, true
		c.a.stats.addSerialized("transaction too large to hold in memory")
	case t.HasStatements():
		u.Barrier, w.ddl = true, true
		c.a.stats.addSerialized("statement (DDL)")
	default:
		if err := c.analyse(ctx, w); err != nil {
			return err
		}
		if w.set.Barrier != "" {
			u.Barrier = true
			c.a.stats.addSerialized(w.set.Barrier)
		}
		u.Set = &w.set
	}
	c.sched.Add(u)
	if u.Blocked() && !u.Barrier {
		for _, p := range w.plans {
			if p != nil {
				c.a.stats.addConflict(p.Name)
				break
			}
		}
	}
	if w.ddl {
		c.ddl++
	}
	return nil
}

// analyse builds the table plans and the writeset of a transaction.
func (c *coordinator) analyse(ctx context.Context, w *work) error {
	t := w.t
	w.plans = make([]*plan.Table, len(t.Items))
	for i := range t.Items {
		p, err := c.a.plans.Get(ctx, t.Items[i].Rows.Table)
		if err != nil {
			return fmt.Errorf("%s: %w", "transaction "+describeTxn(t), err)
		}
		w.plans[i] = p
		if c.a.cfg.Mode != scheduler.ModeWriteset {
			if p.Serialize != "" && w.set.Barrier == "" {
				w.set.Barrier = p.Serialize
			}
			continue
		}
		it := &t.Items[i]
		for j := it.First; j < it.Last; j++ {
			c.ws.AddChange(&w.set, p, &t.Changes[j])
		}
	}
	return nil
}

// dispatch hands ready batches to idle workers.
func (c *coordinator) dispatch() {
	for c.firstErr == nil && c.busy < c.a.cfg.Workers {
		units := c.sched.Next()
		if units == nil {
			return
		}
		b := &batch{units: units, first: units[0].Seq, last: units[len(units)-1].Seq, abort: make(chan struct{})}
		now := time.Now()
		for _, u := range units {
			w := u.Payload.(*work)
			b.works = append(b.works, w)
			b.tries = max(b.tries, w.tries)
			c.a.stats.DependencyWait.Add(int64(now.Sub(w.added)))
		}
		c.jobs <- b
		c.busy++
	}
}

// handle processes a worker's report.
func (c *coordinator) handle(r result, inClosed bool) {
	b := r.b
	switch {
	case r.err == nil:
		c.sched.Committed(b.units)
		for _, w := range b.works {
			if w.ddl {
				c.ddl--
			}
		}
	case c.firstErr != nil:
		// Stopping: whatever this batch did was rolled back.
	case r.retry:
		b.tries++
		c.a.stats.Workers[r.worker].Retries.Add(1)
		if b.tries > c.a.cfg.MaxRetries {
			c.fail(fmt.Errorf("%s: still failing after %d retries: %w", b.describe(), c.a.cfg.MaxRetries, r.err))
			return
		}
		c.a.log.Debug("re-running batch", "batch", b.describe(), "try", b.tries, "reason", r.err)
		for _, w := range b.works {
			w.tries = b.tries
		}
		c.sched.Requeue(b.units)
	case errors.Is(r.err, errStreamAborted) && inClosed:
		// The source stopped in the middle of a streamed transaction while
		// we were shutting down: it was rolled back and will be re-read.
		for _, w := range b.works {
			if w.ddl {
				c.ddl--
			}
		}
		c.fail(errStopped)
	default:
		c.fail(r.err)
	}
}

// errStopped ends a graceful stop that had to roll back a streamed
// transaction; Run reports it as a clean stop.
var errStopped = errors.New("stopped")

// saveIdle writes the position of transactions committed in memory only
// (empty ones) when nothing else has written it for a while, or at the end.
func (c *coordinator) saveIdle(ctx context.Context, final bool) error {
	s := c.seq
	if s.unsaved == 0 || !final && time.Since(s.lastSave) < c.a.cfg.IdleSave {
		return nil
	}
	save := position.Save{GTID: s.pos.String(), File: s.file, Pos: s.filePos, LastGTID: s.lastGTID,
		SourceTS: s.sourceTS, Applied: s.unsaved}
	q := position.AppendUpdate(nil, c.a.cfg.Stream, save, c.a.cfg.Owner, "")
	if _, err := c.a.meta.ExecContext(ctx, string(q)); err != nil {
		if position.IsNotOwner(err) {
			return position.ErrNotOwner
		}
		return fmt.Errorf("save position %s: %w", save.GTID, err)
	}
	s.unsaved, s.lastSave = 0, time.Now()
	return nil
}
