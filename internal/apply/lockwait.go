package apply

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/binlane/binlane/internal/sqlerr"
)

// lockMonitor breaks the deadlock InnoDB cannot see under ordered commit:
// an earlier transaction waiting for a row lock held by a later one, which
// itself waits for the earlier one's commit turn. Such a cycle always
// contains a wait from an earlier batch on a later one (commit turns only
// point backwards), so rolling back later batches that an earlier one waits
// for, and re-running them after, resolves every one.
//
// With the PROCESS privilege, when one of our statements has run longer
// than the probe time, the monitor asks the target who waits for whom and
// rolls back exactly the later batches an earlier one waits for (directly or
// through a chain of waits); a blocker outside binlane is left alone: we
// wait for it. Without it (information_schema's lock tables are then
// empty or refused) the monitor works blind: when the batch next in commit
// order has run a statement for longer than BlindAfter, every later batch
// that holds its locks while waiting for its commit turn is rolled back and
// re-run. That costs re-running them when the first batch was merely slow,
// so the precise mode is preferred; both are counted.
type lockMonitor struct {
	monitorConfig
	blind bool
}

type monitorConfig struct {
	pool       *sql.DB
	workers    []*worker
	seq        *sequencer
	probe      time.Duration
	blindAfter time.Duration
	stats      *Stats
	log        *slog.Logger
}

func newLockMonitor(cfg monitorConfig) *lockMonitor { return &lockMonitor{monitorConfig: cfg} }

const lockWaitQuery = `SELECT rt.trx_mysql_thread_id, bt.trx_mysql_thread_id
	FROM information_schema.INNODB_LOCK_WAITS w
	JOIN information_schema.INNODB_TRX rt ON rt.trx_id = w.requesting_trx_id
	JOIN information_schema.INNODB_TRX bt ON bt.trx_id = w.blocking_trx_id`

// lockWaitersQuery lists the connections in a lock wait. INNODB_LOCK_WAITS
// does not name every blocker (a lock the holder took implicitly, by
// inserting the record, can be missing there), so a wait is also detected
// from the waiter's side.
const lockWaitersQuery = `SELECT trx_mysql_thread_id, TIMESTAMPDIFF(MICROSECOND, trx_wait_started, NOW(6))
	FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`

func (m *lockMonitor) run(ctx context.Context) {
	if len(m.workers) < 2 {
		return // one connection cannot block itself
	}
	m.blind = !m.canSee(ctx)
	// InnoDB refreshes its information_schema lock tables only when they
	// were not read for 100 ms: polling faster would read a frozen picture.
	period := max(m.probe, 150*time.Millisecond)
	if m.blind {
		period = max(m.blindAfter/4, 50*time.Millisecond)
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if m.blind {
			m.releaseBlind()
			continue
		}
		if !m.someoneSlow(m.probe) {
			continue
		}
		if err := m.probeServer(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("lock-wait probe failed; resolving lock waits blind from now on", "error", err)
			m.blind = true
		}
	}
}

// canSee reports whether the target lets us read who waits for whom; it
// says so once when it does not.
func (m *lockMonitor) canSee(ctx context.Context) bool {
	var n int
	err := m.pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX").Scan(&n)
	if err == nil {
		var granted int
		// Without PROCESS, MariaDB returns an empty table instead of an error.
		err = m.pool.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES
			WHERE PRIVILEGE_TYPE = 'PROCESS'`).Scan(&granted)
		if err == nil && granted > 0 {
			return true
		}
	}
	if ctx.Err() == nil {
		reason := "the target user lacks the PROCESS privilege"
		if err != nil && !sqlerr.PrivilegeMissing(err) {
			reason = err.Error()
		}
		m.log.Warn("cannot see the target's lock waits ("+reason+"): a lock wait between binlane's own transactions "+
			"is resolved after "+m.blindAfter.String()+" instead of at once; GRANT PROCESS to the target user to make it precise",
			"workers", len(m.workers))
	}
	return false
}

func (m *lockMonitor) someoneSlow(limit time.Duration) bool {
	before := time.Now().Add(-limit).UnixNano()
	for _, w := range m.workers {
		if s := w.execStart.Load(); s != 0 && s < before {
			return true
		}
	}
	return false
}

// releaseBlind rolls back the later batches waiting for their turn when the
// batch next in commit order has been running a statement too long.
func (m *lockMonitor) releaseBlind() {
	next := m.seq.committedSeq() + 1
	before := time.Now().Add(-m.blindAfter).UnixNano()
	var head *batch
	for _, w := range m.workers {
		if b := w.cur.Load(); b != nil && b.first == next {
			if s := w.execStart.Load(); s != 0 && s < before {
				head = b
			}
		}
	}
	if head == nil {
		return
	}
	for _, w := range m.workers {
		if b := w.cur.Load(); b != nil && b.first > head.first && w.waitingTurn.Load() && w.abortBatch(b) {
			m.stats.BlindLockWaitKills.Add(1)
			m.log.Debug("rolling back a later batch: the batch next in line is slow and may wait on its locks",
				"next", head.first, "rolled_back", b.first)
		}
	}
}

func (m *lockMonitor) probeServer(ctx context.Context) error {
	byConn := make(map[int64]*worker, len(m.workers))
	for _, w := range m.workers {
		if id := w.connID.Load(); id != 0 {
			byConn[id] = w
		}
	}
	rows, err := m.pool.QueryContext(ctx, lockWaitQuery)
	if err != nil {
		return err
	}
	blockers := map[int64][]int64{} // waiting connection -> connections it waits for
	for rows.Next() {
		var waiter, blocker int64
		if err := rows.Scan(&waiter, &blocker); err != nil {
			rows.Close()
			return err
		}
		blockers[waiter] = append(blockers[waiter], blocker)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for waiter := range blockers {
		ww := byConn[waiter]
		if ww == nil {
			continue // not ours
		}
		if wb := ww.cur.Load(); wb != nil {
			m.release(wb, waiter, blockers, byConn)
		}
	}
	return m.unexplained(ctx, blockers, byConn)
}

// unexplained handles our connections in a lock wait whose blocker the
// server did not name: every later batch waiting for its commit turn is
// rolled back (each holds locks it cannot use before the waiter commits),
// so whichever of them holds the lock lets go.
func (m *lockMonitor) unexplained(ctx context.Context, blockers map[int64][]int64, byConn map[int64]*worker) error {
	rows, err := m.pool.QueryContext(ctx, lockWaitersQuery)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var conn, waitedMicros int64
		if err := rows.Scan(&conn, &waitedMicros); err != nil {
			return err
		}
		ww := byConn[conn]
		if ww == nil || len(blockers[conn]) > 0 || time.Duration(waitedMicros)*time.Microsecond < 4*m.probe {
			continue
		}
		wb := ww.cur.Load()
		if wb == nil {
			continue
		}
		for _, w := range m.workers {
			if b := w.cur.Load(); b != nil && b.first > wb.first && w.waitingTurn.Load() && w.abortBatch(b) {
				m.stats.LockWaitKills.Add(1)
				m.log.Debug("rolling back a later batch: an earlier one waits on an unnamed lock", "blocked", wb.first, "rolled_back", b.first)
			}
		}
	}
	return rows.Err()
}

// release aborts every batch later than wb that wb waits for, directly or
// through other waiting connections. An aborted batch that is still
// executing finishes its statement (once what it waits for is released in
// turn) and rolls back when it reaches its commit turn; none is ever
// killed mid-statement. Waits on connections that are not ours, and on
// earlier batches, are left alone: those end by themselves.
func (m *lockMonitor) release(wb *batch, conn int64, blockers map[int64][]int64, byConn map[int64]*worker) {
	seen := map[int64]bool{conn: true}
	queue := []int64{conn}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, b := range blockers[c] {
			if seen[b] {
				continue
			}
			seen[b] = true
			bw := byConn[b]
			if bw == nil {
				continue
			}
			if bb := bw.cur.Load(); bb != nil && bb.first > wb.first {
				if bw.abortBatch(bb) {
					m.stats.LockWaitKills.Add(1)
					m.log.Debug("rolling back a later batch that blocks an earlier one", "blocked", wb.first, "blocker", bb.first)
				}
			}
			queue = append(queue, b)
		}
	}
}
