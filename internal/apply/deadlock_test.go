package apply

import (
	"testing"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

// TestOrderedCommitLockWait builds the deadlock InnoDB cannot see: an
// earlier transaction (domain 1, slow: it first inserts many rows) and a
// later one (domain 2) update the same row. Commit-order mode trusts the
// domains and runs them at once, so the later one takes the row lock first
// and then waits for its commit turn while the earlier one waits for the
// lock. The lock-wait monitor must roll the later one back and re-run it.
func TestOrderedCommitLockWait(t *testing.T) {
	p := newPair(t)
	lockWaitWorkload(t, p)
	st, err := p.replay(t, runOpts{workers: 4, maxBatch: 1, mode: scheduler.ModeCommitOrder, process: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lock-wait rollbacks: %d, retries: %d", st.LockWaitKills.Load(), retries(st))
	if st.LockWaitKills.Load() == 0 {
		t.Fatal("the test did not hit the ordered-commit lock wait")
	}
	p.compare(t, "dl")
}

func lockWaitWorkload(t *testing.T, p *pair) {
	p.src.ExecT(t,
		"CREATE DATABASE dl",
		"CREATE TABLE dl.t (id INT PRIMARY KEY, v INT, u VARCHAR(10) COLLATE utf8mb4_general_ci UNIQUE)",
		"CREATE TABLE dl.big (id INT PRIMARY KEY, pad CHAR(100))",
		"INSERT INTO dl.t VALUES (1, 0, 'abc'), (2, 0, 'def')",
	)
	for i := 0; i < 5; i++ {
		p.src.ExecT(t,
			"SET SESSION gtid_domain_id=1; BEGIN; INSERT INTO dl.big SELECT seq, 'x' FROM dl.seq_"+itoa(1+i*20000)+"_to_"+itoa((i+1)*20000)+"; UPDATE dl.t SET v=v+1 WHERE id=1; COMMIT",
			"SET SESSION gtid_domain_id=2; UPDATE dl.t SET v=v*10 WHERE id=1",
		)
	}
}

// TestOrderedCommitLockWaitWithoutProcess is the same deadlock with the
// documented least privileges, without PROCESS: the lock-wait monitor
// cannot see who waits for whom and must resolve it blind (it once logged
// the failure of every probe at debug level and the stream sat still
// until innodb_lock_wait_timeout, 20 s per occurrence, or for good).
func TestOrderedCommitLockWaitWithoutProcess(t *testing.T) {
	p := newPair(t)
	lockWaitWorkload(t, p)
	start := time.Now()
	st, err := p.replay(t, runOpts{workers: 4, maxBatch: 1, mode: scheduler.ModeCommitOrder})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("blind rollbacks: %d, retries: %d, in %s", st.BlindLockWaitKills.Load(), retries(st), time.Since(start))
	if st.BlindLockWaitKills.Load() == 0 {
		t.Fatal("the test did not hit the ordered-commit lock wait, or resolved it some other way")
	}
	p.compare(t, "dl")
}

func retries(st *Stats) uint64 {
	var n uint64
	for i := range st.Workers {
		n += st.Workers[i].Retries.Load()
	}
	return n
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestLaterDeletesCaseVariantUniqueValue: an earlier transaction (domain 1,
// slow) replaces a unique value with a case variant ('abc' -> 'ABC' on a
// new row), a later one (domain 2) deletes that value by its other
// spelling. Commit-order mode lets the later one run first: it finds
// nothing to delete, which must not be fatal while the earlier one is
// still in flight — it is re-run after, and both sides end equal.
func TestLaterDeletesCaseVariantUniqueValue(t *testing.T) {
	p := newPair(t)
	p.src.ExecT(t,
		"CREATE DATABASE uq",
		"CREATE TABLE uq.t (id INT PRIMARY KEY, u VARCHAR(10) COLLATE utf8mb4_general_ci UNIQUE)",
		"CREATE TABLE uq.big (id INT PRIMARY KEY, pad CHAR(100))",
	)
	for i := 0; i < 4; i++ {
		a, b := itoa(10*i+1), itoa(10*i+2)
		p.src.ExecT(t,
			"INSERT INTO uq.t VALUES ("+a+", 'abc"+itoa(i)+"')",
			"SET SESSION gtid_domain_id=1; BEGIN; INSERT INTO uq.big SELECT seq, 'x' FROM uq.seq_"+itoa(1+i*30000)+"_to_"+itoa((i+1)*30000)+
				"; DELETE FROM uq.t WHERE id="+a+"; INSERT INTO uq.t VALUES ("+b+", 'ABC"+itoa(i)+"'); COMMIT",
			"SET SESSION gtid_domain_id=2; DELETE FROM uq.t WHERE u='abc"+itoa(i)+"'",
		)
	}
	st, err := p.replay(t, runOpts{workers: 4, maxBatch: 1, mode: scheduler.ModeCommitOrder})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lock-wait rollbacks: %d, retries: %d", st.LockWaitKills.Load(), retries(st))
	if retries(st) == 0 {
		t.Fatal("the later transaction never ran ahead of the earlier one: the test proves nothing")
	}
	p.compare(t, "uq")
}

// TestOrderedCommitLockWaitAhead is the same deadlock with two workers,
// which render ahead: the earlier batch waits in its last round trip for
// the later one's row lock, so its worker takes the next batch meanwhile;
// the later batch is rolled back and queued again. Once the earlier one
// commits, the batch its worker took ahead would wait for the requeued
// one, and the other worker may hold a later batch too: nobody would be
// left to run the requeued one. The batch taken ahead must give way.
func TestOrderedCommitLockWaitAhead(t *testing.T) {
	p := newPair(t)
	lockWaitWorkload(t, p)
	for i := 0; i < 4; i++ {
		lockWaitWorkloadMore(t, p, i)
	}
	st, err := p.replay(t, runOpts{workers: 2, maxBatch: 1, mode: scheduler.ModeCommitOrder, process: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lock-wait rollbacks: %d, retries: %d, rendered ahead %d, handed back %d", st.LockWaitKills.Load(), retries(st),
		st.RenderedAhead.Load(), st.AheadGaveWay.Load())
	if st.LockWaitKills.Load() == 0 {
		t.Fatal("the test did not hit the ordered-commit lock wait")
	}
	p.compare(t, "dl")
}

// lockWaitWorkloadMore adds, after each slow transaction, later
// independent ones that idle workers can take.
func lockWaitWorkloadMore(t *testing.T, p *pair, i int) {
	p.src.ExecT(t,
		"SET SESSION gtid_domain_id=1; BEGIN; INSERT INTO dl.big SELECT seq, 'y' FROM dl.seq_"+itoa(200001+i*20000)+"_to_"+itoa(200000+(i+1)*20000)+"; UPDATE dl.t SET v=v+1 WHERE id=2; COMMIT",
		"SET SESSION gtid_domain_id=2; UPDATE dl.t SET v=v*10 WHERE id=2",
		"SET SESSION gtid_domain_id=2; INSERT INTO dl.t VALUES ("+itoa(100+3*i)+", 0, NULL)",
		"SET SESSION gtid_domain_id=1; INSERT INTO dl.t VALUES ("+itoa(101+3*i)+", 0, NULL)",
		"SET SESSION gtid_domain_id=2; INSERT INTO dl.t VALUES ("+itoa(102+3*i)+", 0, NULL)",
	)
}
