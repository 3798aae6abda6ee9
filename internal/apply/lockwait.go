package apply

import (
	"context"
	"database/sql"
	"time"
)

// lockMonitor breaks the deadlock InnoDB cannot see under ordered commit:
// an earlier transaction waiting for a row lock held by a later one, which
// itself waits for the earlier one's commit turn. When one of our
// statements has run longer than the probe time, it asks the target who
// waits for whom; every later batch an earlier one waits for (directly or
// through a chain of waits) is rolled back and re-run after, so the earlier
// one goes through. Such a cycle always contains a wait from an earlier
// batch on a later one (commit turns only point backwards), so this finds
// every one. A blocker outside binlane is left alone: we wait for it.
type lockMonitor struct {
	a       *Applier
	pool    *sql.DB
	workers []*worker
}

func newLockMonitor(a *Applier, pool *sql.DB, workers []*worker) *lockMonitor {
	return &lockMonitor{a: a, pool: pool, workers: workers}
}

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
	// InnoDB refreshes its information_schema lock tables only when they
	// were not read for 100 ms: polling faster would read a frozen picture.
	tick := time.NewTicker(max(m.a.cfg.LockProbe, 150*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !m.someoneSlow() {
			continue
		}
		if err := m.probe(ctx); err != nil && ctx.Err() == nil {
			m.a.log.Debug("lock-wait probe failed", "error", err)
		}
	}
}

func (m *lockMonitor) someoneSlow() bool {
	limit := time.Now().Add(-m.a.cfg.LockProbe).UnixNano()
	for _, w := range m.workers {
		if s := w.execStart.Load(); s != 0 && s < limit {
			return true
		}
	}
	return false
}

func (m *lockMonitor) probe(ctx context.Context) error {
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
		if ww == nil || len(blockers[conn]) > 0 || time.Duration(waitedMicros)*time.Microsecond < 4*m.a.cfg.LockProbe {
			continue
		}
		wb := ww.cur.Load()
		if wb == nil {
			continue
		}
		for _, w := range m.workers {
			if b := w.cur.Load(); b != nil && b.first > wb.first && w.waitingTurn.Load() && w.abortBatch(b) {
				m.a.stats.LockWaitKills.Add(1)
				m.a.log.Debug("rolling back a later batch: an earlier one waits on an unnamed lock", "blocked", wb.first, "rolled_back", b.first)
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
					m.a.stats.LockWaitKills.Add(1)
					m.a.log.Debug("rolling back a later batch that blocks an earlier one", "blocked", wb.first, "blocker", bb.first)
				}
			}
			queue = append(queue, b)
		}
	}
}
