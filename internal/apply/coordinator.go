package apply

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// coordinator is the single goroutine that owns the scheduler.
type coordinator struct {
	admitted int // transactions received, for yielding (see loop)
	a        *Applier
	sched    *scheduler.Scheduler
	seq      *sequencer
	// jobs has a channel per worker; idle lists the workers without a
	// batch, the one that finished last on top. A batch goes to that one:
	// when fewer batches are ready than there are workers, the same few
	// workers (and their target connections, threads and caches) stay warm,
	// where a shared queue handed each batch to the worker idle longest.
	// Hot rows, 500,000 transactions (bench): 16 workers reached 0.82-0.89x
	// of one worker's rate that way, 1.06-1.07x this way.
	jobs []chan *batch
	idle []int
	// offered marks the workers that offered to take a batch before
	// reporting the one they have (see offer); outstanding counts the
	// batches handed out and not reported.
	offered     []bool
	outstanding int
	// aheadOf is the batch handed to a worker on its offer, until the
	// worker reports the batch it had (see report).
	aheadOf  []*batch
	workers  []*worker
	results  chan result
	abortAll chan struct{}
	ws       writeset.Builder
	// wsSet is where the writesets of whole transactions are built, its
	// memory reused; each work gets an exactly sized copy (see keepSet).
	wsSet scheduler.KeySet
	alone int // statement or streamed transactions in flight: intake waits
	// streaming is the transaction whose parts are arriving; part is a part
	// of it received and not yet handed to its worker.
	streaming *work
	part      *txn.Part
	firstErr  error
	// addErr is a transaction that could not even be analysed (no plan for
	// a table): intake stops there, but the transactions before it are
	// sound and still commit, so the stream stops right before it.
	addErr error
	// inflight lists the source commit times of the transactions added and
	// not committed, oldest first: what lag is measured from.
	inflight []inflightTxn
	// writing counts the chunks of each table being written (by table
	// hash), for Stats.ChunksBeside.
	writing map[uint64]int
	// lastOfDomain is the Seq of the last unit added of each GTID domain
	// with units in flight, lastOrdered that of the last Ordered unit in
	// flight (0: none): what the next units' commits follow (see turnRule).
	lastOfDomain map[uint32]uint64
	lastOrdered  uint64
	// domainsAt is when the per-domain NextTS was last published.
	domainsAt time.Time
	// temps are the source sessions' connections with their temporary
	// tables (tempsessions.go).
	temps *tempSessions
	// sourceOK caches the source's answers that let statement-logged DML
	// run (statementdml.go).
	sourceOK map[string]bool
	// window sizes the scheduler's window (nil: fixed; see window.go).
	window *windowSizer
}

type inflightTxn struct {
	seq uint64
	t   *txn.Txn
}

// Run applies the transactions received from in until it is closed (then
// it finishes what it holds and returns nil) or a transaction fails (then
// it rolls back everything not committed and returns the error). ctx ends
// everything at once.
func (a *Applier) Run(ctx context.Context, in *txn.Pipe, start Start) error {
	session := dsn.ApplySession(!a.cfg.SkipBinlog, a.cfg.LockWaitTimeout)
	pool, err := OpenPool(a.cfg.Target, a.cfg.Workers+2, session)
	if err != nil {
		return err
	}
	defer pool.Close()
	seq := newSequencer(start.FirstSeq-1, start.GTID, start.File, start.Pos)
	// Not while a copy runs in the stream: its chunks and the rows of the
	// tables being copied wait for each other in an order of their own,
	// which rendering ahead was never tested against.
	renderAhead := !a.cfg.NoRenderAhead && a.cfg.Copy == nil
	a.stats.setPosition(start.GTID.String())
	c := &coordinator{a: a, seq: seq,
		sched: scheduler.New(scheduler.Config{Mode: a.cfg.Mode, MaxUnits: a.cfg.Window, MaxBytes: a.cfg.WindowBytes,
			MaxBatch: a.cfg.MaxBatch, MaxBatchBytes: a.cfg.MaxBatchBytes, MaxSolo: a.cfg.MaxChunkWrites, Domains: true,
			Chain: chainFor(a.cfg.Workers, renderAhead), ChainInOrder: renderAhead}, start.FirstSeq),
		jobs: make([]chan *batch, a.cfg.Workers), offered: make([]bool, a.cfg.Workers), aheadOf: make([]*batch, a.cfg.Workers),
		results:  make(chan result, 2*a.cfg.Workers),
		abortAll: make(chan struct{}), writing: map[uint64]int{}, lastOfDomain: map[uint32]uint64{}, sourceOK: map[string]bool{}}
	window := a.cfg.Window
	if a.cfg.adaptWindow {
		c.window = newWindowSizer(scheduler.DefaultWindow(1, a.cfg.MaxBatch), a.cfg.Window)
		window = c.window.size()
		c.sched.SetMaxUnits(window)
	}
	a.stats.Window.Store(int64(window))
	for i := a.cfg.Workers - 1; i >= 0; i-- {
		c.jobs[i] = make(chan *batch, 1)
		c.idle = append(c.idle, i)
	}
	c.temps = newTempSessions(a.cfg.Target, session)
	defer c.temps.endAll()
	workers, err := c.newWorkers(ctx, pool, session, renderAhead)
	if err != nil {
		return err
	}
	c.workers = workers
	if start.Ready != nil {
		start.Ready()
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.loop(ctx) })
	}
	monCtx, stopMonitor := context.WithCancel(ctx)
	mon := newLockMonitor(monitorConfig{pool: pool, workers: workers, seq: seq, probe: a.cfg.LockProbe,
		blindAfter: a.cfg.BlindAfter, stats: a.stats, log: a.cfg.Logger})
	wg.Go(func() { mon.run(monCtx) })
	err = c.loop(ctx, in)
	for _, j := range c.jobs {
		close(j)
	}
	stopMonitor()
	wg.Wait()
	return err
}

// loop is the coordinator's event loop.
func (c *coordinator) loop(ctx context.Context, in *txn.Pipe) error {
	ticker := time.NewTicker(c.a.cfg.IdleSave)
	defer ticker.Stop()
	inClosed := false
	for {
		c.dispatch()
		units, pending := c.sched.InFlight()
		c.a.stats.InFlight.Store(int64(units))
		if int64(units) > c.a.stats.PeakInFlight.Load() {
			c.a.stats.PeakInFlight.Store(int64(units))
		}
		c.a.stats.Pending.Store(int64(pending))
		if c.busy() == 0 && (c.firstErr != nil || (inClosed || c.addErr != nil) && units == 0) {
			if c.firstErr != nil {
				if !errors.Is(c.firstErr, position.ErrNotOwner) && !c.seq.isBroken() {
					// What committed before the failure stays committed: save
					// the position of empty transactions it holds in memory
					// (not after a COMMIT of unknown outcome: the position in
					// memory may lack it, and would undo its save).
					sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
					_ = c.saveIdle(sctx, true)
					cancel()
				}
				return c.firstErr
			}
			if err := c.saveIdle(ctx, true); err != nil || c.addErr == nil {
				return err
			}
			return c.addErr
		}
		var intake <-chan txn.Part
		if !inClosed && c.firstErr == nil && c.addErr == nil && c.part == nil &&
			(c.streaming != nil || c.alone == 0 && !c.sched.Full()) {
			intake = in.C()
		}
		var relay chan<- txn.Part
		var next txn.Part
		if c.part != nil {
			relay, next = c.streaming.parts, *c.part
		}
		select {
		case p, ok := <-intake:
			if !ok {
				inClosed = true
				continue
			}
			in.Taken(&p)
			c.receive(ctx, p)
			// Admitting transactions is work off the critical path: every
			// eighth, a worker made runnable meanwhile (a batch
			// dispatched, a chained batch released) gets to run. Go does
			// not prefer it: on a busy core (binlane pinned to one, or the
			// target using the other) the coordinator admitted a whole
			// batch's worth of transactions, a millisecond and more,
			// before the worker could send its batch, and the target
			// idled. Pinned, one worker, a yield after every transaction
			// took the target's core from 67-73% busy to 79-86%; every
			// eighth does the same for 10-20% less of binlane's CPU.
			if c.admitted++; c.admitted%8 == 0 {
				runtime.Gosched()
			}
		case relay <- next:
			if next.Last {
				c.streaming = nil
			}
			c.part = nil
		case r := <-c.results:
			c.report(r)
		case <-ticker.C:
			c.publishDomains()
			if c.busy() == 0 && c.firstErr == nil {
				if err := c.saveIdle(ctx, false); err != nil {
					c.fail(err)
				}
			}
		case <-ctx.Done():
			c.fail(ctx.Err())
		}
	}
}

// receive takes one part from the source: a whole transaction, the first
// part of one sent in parts, or a later part of it (relayed to the worker
// applying it).
func (c *coordinator) receive(ctx context.Context, p txn.Part) {
	switch {
	case c.streaming != nil && p.Txn == c.streaming.t && !p.First:
		c.part = &p
		if err := c.nextPart(ctx, c.streaming, &p); err != nil {
			c.fail(err)
		}
	case c.streaming == nil && p.First && p.Abort == nil:
		if err := c.add(ctx, p); err != nil {
			c.addErr = err
		}
	default:
		// The assembler sends a transaction's parts in order, the first
		// one first: anything else would apply a transaction in part.
		c.fail(fmt.Errorf("transaction %s: part out of order (first %v, last %v, abort %v)", p.Txn.GTID, p.First, p.Last, p.Abort))
	}
}

func (c *coordinator) fail(err error) {
	if c.firstErr == nil {
		c.firstErr = err
		close(c.abortAll)
	}
}

// Reasons why a transaction runs alone (short stable codes: they label
// metrics; the plan and the writeset add theirs).
const (
	AloneDDL       = "ddl"        // statements: DDL, deferred trigger DDL
	AloneTooLarge  = "too_large"  // sent in parts
	AloneSavepoint = "savepoints" // ROLLBACK TO SAVEPOINT or ROLLBACK over non-transactional changes
	AloneXA        = "xa"         // a step of an XA transaction the source prepared
	// AloneStatementDML (statementdml.go): row changes logged as statements.
)

// add analyses a transaction and puts it into the scheduler.
func (c *coordinator) add(ctx context.Context, p txn.Part) error {
	if p.Chunk != nil {
		return c.addChunk(ctx, p)
	}
	t := p.Txn
	if t.SessionsEnded {
		// The source restarted: its sessions and their temporary tables are
		// gone. Nothing that uses them is in flight (they run alone).
		c.temps.endAll()
	}
	w := newWork(p)
	reason, err := c.aloneReason(ctx, w, p)
	if err != nil {
		return err
	}
	if err := c.place(ctx, w, reason, p.Bytes); err != nil {
		return err
	}
	c.sched.Add(&w.unit)
	c.follow(w)
	c.inflight = append(c.inflight, inflightTxn{seq: t.Seq, t: t})
	c.updateNextTS()
	if w.unit.Blocked() && !w.unit.Barrier {
		for _, p := range w.plans {
			if p != nil {
				c.a.stats.addConflict(p.Name)
				break
			}
		}
	}
	return nil
}

// addStatements prepares a transaction with statements, which runs alone,
// also inside a group that rolled back: DDL commits on its own, so a
// rollback never undoes it (a failed CREATE OR REPLACE ... SELECT logs the
// DROP it really did between BEGIN and ROLLBACK). Statement-logged DML has
// no writeset.
func (c *coordinator) addStatements(ctx context.Context, w *work, reason *string) error {
	dml, err := c.checkStatementDML(ctx, w)
	if err != nil {
		return err
	}
	w.statements = true
	switch {
	case *reason != "":
	case dml:
		*reason = AloneStatementDML
	default:
		*reason = AloneDDL
	}
	return c.copyStatements(w)
}

// updateNextTS publishes the commit time of the oldest transaction in
// flight, and every 100 ms (or when nothing is in flight) that of each
// GTID domain: a scan of the window per transaction would cost more than
// the lag it tells. A transaction sent in parts learns its time only at its
// end (the coordinator reads it after its last part arrived, and not
// before).
func (c *coordinator) updateNextTS() {
	if now := time.Now(); len(c.inflight) == 0 || now.Sub(c.domainsAt) >= 100*time.Millisecond {
		c.domainsAt = now
		c.publishDomains()
	}
	for _, x := range c.inflight {
		if x.t == c.streamingTxn() {
			continue
		}
		if x.t.Timestamp != 0 {
			c.a.stats.NextTS.Store(int64(x.t.Timestamp))
			return
		}
	}
	c.a.stats.NextTS.Store(0)
}

// publishDomains publishes the oldest source commit time in flight of
// each MariaDB GTID domain.
func (c *coordinator) publishDomains() {
	next := map[uint32]int64{}
	for _, x := range c.inflight {
		g := x.t.GTID
		if g.Flavor != gtid.MariaDB || x.t == c.streamingTxn() || x.t.Timestamp == 0 {
			continue
		}
		if _, ok := next[g.Domain]; !ok {
			next[g.Domain] = int64(x.t.Timestamp)
		}
	}
	c.a.stats.domainNext.Store(&next)
}

func (c *coordinator) streamingTxn() *txn.Txn {
	if c.streaming == nil {
		return nil
	}
	return c.streaming.t
}

// resolve turns a transaction with savepoint rollbacks into what the source
// kept of it.
func (c *coordinator) resolve(ctx context.Context, t *txn.Txn, body txn.Body) ([]txn.Item, error) {
	src := c.a.cfg.Source
	if src == nil {
		return nil, fmt.Errorf("transaction %s rolls back to a savepoint (or ends in ROLLBACK) over changes to tables that "+
			"are not transactional on the source: binlane needs to read the source's table engines to apply it", t.GTID)
	}
	return txn.ResolveRollbacks(t, body, func(tm *binlog.TableMap) (bool, error) { return src.Transactional(ctx, tm) })
}

// analyse builds the table plans and the writeset of a transaction.
func (c *coordinator) analyse(ctx context.Context, w *work) error {
	t := w.t
	w.plans = make([]*plan.Table, len(w.body.Items))
	for i := range w.body.Items {
		it := &w.body.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		p, err := c.a.plans.Get(ctx, it.Rows.Table)
		if err != nil {
			return fmt.Errorf("transaction %s: %w", t.Describe(), err)
		}
		for j := it.First; j < it.Last; j++ {
			if err := rowsql.Named(p, &w.body.Changes[j]); err != nil {
				return fmt.Errorf("transaction %s: %w", t.Describe(), err)
			}
		}
		w.plans[i] = p
	}
	points, err := filterCopied(c.a.cfg.Copy, &w.body, w.plans)
	if err != nil {
		return fmt.Errorf("transaction %s: %w", t.Describe(), err)
	}
	w.unit.Points = points
	if c.a.cfg.Mode == scheduler.ModeWriteset {
		// c.wsSet is empty: keepSet leaves it so.
		w.keys = rowsql.Keys{Set: &w.set, Spans: make([]writeset.Span, len(w.body.Changes))}
	}
	for i, p := range w.plans {
		if p == nil {
			continue
		}
		if c.a.cfg.Mode != scheduler.ModeWriteset {
			if p.Serialize != "" && w.set.Barrier == "" {
				w.set.Barrier = p.Serialize
			}
			continue
		}
		it := &w.body.Items[i]
		for j := it.First; j < it.Last; j++ {
			w.keys.Spans[j] = c.ws.AddChangeSpan(&c.wsSet, p, &w.body.Changes[j])
		}
	}
	if c.a.cfg.Mode == scheduler.ModeWriteset {
		c.keepSet(w)
	}
	return nil
}

// wsSetMax bounds the keys and table accesses the reused writeset keeps
// between transactions (128 KiB of keys).
const wsSetMax = 1 << 14

// keepSet gives w the writeset built in c.wsSet (the spans stay valid:
// the copy keeps every key's place) and empties c.wsSet for the next
// transaction. A large one is handed over as it is, its memory dropped.
func (c *coordinator) keepSet(w *work) {
	s := &c.wsSet
	if len(s.Keys)+len(s.Shared)+len(s.Tables) > wsSetMax {
		w.set, c.wsSet = *s, scheduler.KeySet{}
		return
	}
	w.set.CopyFrom(s)
	s.Reset()
}

// follow records what the commit of a unit just added follows (see
// turnRule), from the scheduler's verdict on whether it is Ordered.
func (c *coordinator) follow(w *work) {
	u := &w.unit
	if u.Ordered {
		w.afterAll = true
		c.lastOrdered = u.Seq
	} else {
		w.afterDomain, w.afterOrdered = c.lastOfDomain[u.Domain], c.lastOrdered
	}
	c.lastOfDomain[u.Domain] = u.Seq
}

// ruleOf is what a batch of works starting at first follows to commit:
// what each of its works follows, outside the batch.
func ruleOf(works []*work, first uint64) turnRule {
	var r turnRule
	for _, w := range works {
		r.all = r.all || w.afterAll
		for _, seq := range []uint64{w.afterDomain, w.afterOrdered} {
			if seq != 0 && seq < first {
				r.after = append(r.after, seq)
			}
		}
	}
	return r
}

// chainFor is scheduler.Config.Chain for a number of workers: batches
// prepared ahead while the ones they depend on apply, which a second
// worker, or one that renders ahead (ahead.go), can do. When workers render
// ahead, only the one rendering ahead takes a chained batch
// (Config.ChainInOrder): it sends it on its own connection once its last
// round trip answered, where a second worker waited for that commit and
// then to be scheduled, behind the goroutines reading the stream ahead when
// binlane has one core (an execution trace, 4 workers, the traps backlog:
// 0.1-0.6 ms a batch, the target idle meanwhile). Pinned, 4 workers,
// 3 runs against chained batches on other workers (the builds also
// differed by flushFirst's one-domain case, which changes only batches of
// 1 MiB or more: order entry, docs): traps 25,275 against
// 23,488 trx/s, order entry 6,529 against 6,429, shop 13,592 against
// 11,010, sysbench alike; documents 5,064 against 5,686 (the runs spread
// by a third). Two, not one: a chained batch counts until it commits, also
// while it applies, so with one the batch after it could only be prepared
// once it committed and every other batch of a chain would keep the target
// idle while it was rendered. No deadlock: a chained batch waits only for
// batches dispatched before it, and a worker whose batch fails reports it
// and hands back the one it took ahead, so the retry, first in line, always
// finds that worker.
func chainFor(workers int, renderAhead bool) int {
	if workers < 2 && !renderAhead {
		return 0
	}
	return 2
}

// busy is the batches handed to workers without a result yet.
func (c *coordinator) busy() int { return c.outstanding }

// report takes a worker's message: an offer to take its next batch, or
// the report on one. A worker that offered goes to the bottom of the idle
// list: a truly idle worker gets a batch first (it sends at once, where
// the one that offered sends only once its round trip answered). When its
// report comes and it got nothing on its offer, it moves to the top.
func (c *coordinator) report(r result) {
	if r.offer {
		c.offered[r.worker] = true
		c.idle = slices.Insert(c.idle, 0, r.worker)
		return
	}
	c.resizeWindow()
	c.outstanding--
	if c.offered[r.worker] && c.aheadOf[r.worker] != nil {
		c.offered[r.worker] = false // busy with the batch it took ahead
	} else {
		// Truly idle now, and the warmest: on top (also if it offered).
		c.offered[r.worker] = false
		c.idle = slices.DeleteFunc(c.idle, func(i int) bool { return i == r.worker })
		c.idle = append(c.idle, r.worker)
	}
	if x := c.aheadOf[r.worker]; x != nil {
		c.aheadOf[r.worker] = nil
		if r.err != nil || c.sched.PendingBefore(x.first) {
			// The batch handed out on the offer started at the earliest
			// pending unit; now the batch this report is on failed, or
			// another one before it was requeued (rolled back for an
			// earlier batch): it may have to follow a unit that needs a
			// worker, and every other worker may hold a later batch. It
			// gives way (its turn cannot come first), and this worker is
			// free for the retry.
			c.workers[r.worker].abortAhead(x)
		}
	}
	c.handle(r)
}

// resizeWindow samples the workers holding a batch (a batch taken ahead
// is its worker's second) as one reports its batch.
func (c *coordinator) resizeWindow() {
	if c.window == nil {
		return
	}
	busy := c.outstanding
	for _, x := range c.aheadOf {
		if x != nil {
			busy--
		}
	}
	n := c.window.observe(busy)
	c.sched.SetMaxUnits(n)
	c.a.stats.Window.Store(int64(n))
}

// dispatch hands ready batches to idle workers.
func (c *coordinator) dispatch() {
	for c.firstErr == nil && len(c.idle) > 0 {
		at := len(c.idle) - 1
		var units []*scheduler.Unit
		if !c.offered[c.idle[at]] {
			units = c.sched.Next()
		}
		if units == nil {
			// What only a worker that offered may take (offered workers
			// are at the bottom of the list): a batch in order, chained.
			if at = slices.IndexFunc(c.idle, func(i int) bool { return c.offered[i] }); at < 0 {
				return
			}
			if units = c.sched.NextInOrder(); units == nil {
				return
			}
		}
		i := c.idle[at]
		b := &batch{units: units, first: units[0].Seq, last: units[len(units)-1].Seq, abort: make(chan struct{})}
		now := time.Now()
		for _, u := range units {
			w := u.Payload.(*work)
			b.works = append(b.works, w)
			b.depWait += now.Sub(w.added)
		}
		b.rule = ruleOf(b.works, b.first)
		b.oneDomain = len(c.lastOfDomain) == 1 && c.a.cfg.Copy == nil
		if b.chained = units[0].Chained(); b.chained {
			b.rule = turnRule{all: true}
			c.a.stats.Chained.Add(1)
		}
		c.a.stats.DependencyWait.Add(int64(b.depWait))
		for _, sp := range units[0].Spans {
			if c.writing[sp.Table] > 0 {
				c.a.stats.ChunksBeside.Add(1)
			}
			c.writing[sp.Table]++
		}
		if c.offered[i] {
			c.aheadOf[i] = b
		}
		c.jobs[i] <- b
		c.idle = slices.Delete(c.idle, at, at+1)
		c.outstanding++
	}
}

// handle processes a worker's report.
func (c *coordinator) handle(r result) {
	b := r.b
	for _, sp := range b.units[0].Spans {
		if c.writing[sp.Table]--; c.writing[sp.Table] == 0 {
			delete(c.writing, sp.Table)
		}
	}
	switch {
	case r.err == nil:
		c.sched.Committed(b.units)
		// Domains commit out of Seq order: drop exactly the batch's.
		c.inflight = slices.DeleteFunc(c.inflight, func(x inflightTxn) bool { return x.seq >= b.first && x.seq <= b.last })
		for _, u := range b.units {
			if c.lastOfDomain[u.Domain] == u.Seq {
				delete(c.lastOfDomain, u.Domain)
			}
			if c.lastOrdered == u.Seq {
				c.lastOrdered = 0
			}
		}
		c.updateNextTS()
		for _, w := range b.works {
			if w.barrier {
				c.alone--
			}
		}
		for _, w := range b.works {
			w.body, w.plans, w.set = txn.Body{}, nil, scheduler.KeySet{} // let the rows go before the unit leaves the window
			w.chunk, w.unit.Points = nil, nil
		}
	case c.firstErr != nil:
		// Stopping: whatever this batch did was rolled back.
	case r.retry != noRetry:
		c.retry(b, r)
	default:
		c.fail(r.err)
	}
}

// retry puts a rolled-back batch back into the graph; it runs again once
// every earlier transaction committed. Failures of its own (a lost lock race
// while it was first in line) are bounded by MaxRetries.
func (c *coordinator) retry(b *batch, r result) {
	stats := &c.a.stats.Workers[r.worker]
	stats.Retries.Add(1)
	if r.retry == retryTransient {
		w := b.works[0]
		w.tries++
		if w.tries > c.a.cfg.MaxRetries {
			c.fail(fmt.Errorf("%s: still failing after %d retries: %w", b.describe(), c.a.cfg.MaxRetries, r.err))
			return
		}
	}
	c.a.cfg.Logger.Debug("re-running batch", "batch", b.describe(), "reason", r.err)
	c.sched.Requeue(b.units)
}

// saveIdle writes the position of transactions committed in memory only
// (empty ones) when nothing else has written it for a while, or at the end.
func (c *coordinator) saveIdle(ctx context.Context, final bool) error {
	s := c.seq
	if s.unsaved == 0 || !final && time.Since(s.lastSave) < c.a.cfg.IdleSave {
		return nil
	}
	save := position.Save{GTID: s.pos.String(), File: s.file, Pos: s.filePos, LastGTID: s.lastGTID,
		SourceTS: s.sourceTS, Applied: s.unsaved, TempTables: s.temps}
	if err := position.SaveIdle(ctx, c.a.meta, c.a.cfg.Stream, c.a.cfg.Owner, save); err != nil {
		return err
	}
	s.unsaved, s.temps, s.lastSave = 0, nil, time.Now()
	return nil
}

// errStopping: another batch failed; this one was rolled back.
var errStopping = errors.New("stopping after an error elsewhere")
