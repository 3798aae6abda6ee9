package apply

import (
	"testing"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

func basicWorkload(t *testing.T, p *pair) {
	p.src.ExecT(t,
		"CREATE DATABASE app",
		"CREATE TABLE app.users (id INT PRIMARY KEY, email VARCHAR(100) COLLATE utf8mb4_general_ci UNIQUE, name VARCHAR(50), score DECIMAL(10,2), born DATE, seen DATETIME(6), ts TIMESTAMP(3) NULL, f FLOAT, d DOUBLE, kind ENUM('a','b','c'), tags SET('x','y','z'), flags BIT(5), data BLOB)",
		"CREATE TABLE app.orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, user_id INT NOT NULL, amount DECIMAL(12,3), note TEXT, FOREIGN KEY (user_id) REFERENCES app.users(id) ON DELETE CASCADE)",
		"CREATE TABLE app.nokey (a INT, b VARCHAR(10))",
		"INSERT INTO app.users VALUES (1,'a@x','Ann',1.5,'2000-01-01','2020-01-01 10:00:00.123456','2021-02-03 04:05:06.789',1.25,2.5,'a','x,z',b'10101',x'00ff00')",
		"INSERT INTO app.users VALUES (2,'b@x','Bob',-3.25,NULL,NULL,NULL,NULL,NULL,'b','',0,NULL), (3,'c@x','Cy',0,'1999-12-31','1000-01-01 00:00:00','1970-01-01 00:00:01',-0.5,1e300,'c','y',b'11111','')",
		"INSERT INTO app.orders (user_id, amount, note) VALUES (1, 10.5, 'first'), (1, 20, 'second'), (2, 30.125, NULL)",
		"UPDATE app.users SET email='A@X', score=score+1 WHERE id=1",
		"UPDATE app.users SET id=10 WHERE id=3",
		"BEGIN", "UPDATE app.users SET email='tmp' WHERE id=1", "UPDATE app.users SET email='a@x' WHERE id=2", "UPDATE app.users SET email='b@x' WHERE id=1", "COMMIT",
		"DELETE FROM app.users WHERE id=2",
		"INSERT INTO app.nokey VALUES (1,'x'),(1,'x'),(2,NULL)",
		"DELETE FROM app.nokey WHERE a=1 LIMIT 1",
		"UPDATE app.nokey SET b='y' WHERE a=2",
		"ALTER TABLE app.users ADD COLUMN extra INT DEFAULT 7",
		"INSERT INTO app.users (id, email) VALUES (20, 'new@x')",
		"UPDATE app.users SET extra = 8 WHERE id = 1",
		"ALTER TABLE app.users DROP COLUMN born",
		"UPDATE app.users SET name='Ann2' WHERE id=1",
		"CREATE TABLE app.later (k VARCHAR(20) PRIMARY KEY, v JSON)",
		// An UPDATE that keeps an ON UPDATE CURRENT_TIMESTAMP column as it is
		// must keep it on the target too.
		"CREATE TABLE app.stamped (id INT PRIMARY KEY, c INT, ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
		"INSERT INTO app.stamped VALUES (1, 0, '2001-02-03 04:05:06')",
		"UPDATE app.stamped SET c = 1, ts = ts WHERE id = 1",
		`INSERT INTO app.later VALUES ('k1', '{"a": [1, 2, {"b": null}]}'), ('K2', '"x"')`,
	)
}

func TestReplayBasicSerial(t *testing.T) {
	p := newPair(t)
	basicWorkload(t, p)
	if _, err := p.replay(t, runOpts{workers: 1, maxBatch: 1}); err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
}

func TestReplayBasicParallelMerged(t *testing.T) {
	p := newPair(t)
	basicWorkload(t, p)
	if _, err := p.replay(t, runOpts{workers: 4, maxBatch: 8, mode: scheduler.ModeWriteset}); err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
}

func TestReplayCountsCommits(t *testing.T) {
	p := newPair(t)
	basicWorkload(t, p)
	st, err := p.replay(t, runOpts{workers: 2, maxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("committed=%d serialized=%v conflicts=%v", st.Committed.Load(), st.Serialized(), st.Conflicts())
	if st.Committed.Load() < 20 {
		t.Fatalf("only %d transactions committed", st.Committed.Load())
	}
	// The position applied up to is the source's, and the workers'
	// dependency waits add up to the applier's.
	var srcPos string
	if err := p.src.OpenT(t, "").QueryRow("SELECT @@gtid_binlog_pos").Scan(&srcPos); err != nil {
		t.Fatal(err)
	}
	if got := st.Position(); got != srcPos {
		t.Errorf("position %q, want the source's %q", got, srcPos)
	}
	snap := st.Snapshot()
	var dep time.Duration
	for _, w := range snap.Workers {
		dep += w.DependencyWait
	}
	if dep != snap.DependencyWait || snap.Position != srcPos {
		t.Errorf("workers' dependency wait %s, applier's %s; snapshot position %q", dep, snap.DependencyWait, snap.Position)
	}
	p.compare(t, "app")
}

// TestChainStaysOnFewWorkers: transactions that each wait for the one
// before go to the worker that renders them ahead while its last round
// trip runs (scheduler's ChainInOrder), not round the idle ones: a backlog
// with no parallelism in it must cost no more with 4 workers than with one
// (each batch on another worker was another cold target connection; hot
// rows with 16 workers took up to 1.2x the time of one; a chained batch on
// a second worker waited for the commit before it and then to be
// scheduled).
func TestChainStaysOnFewWorkers(t *testing.T) {
	st := replayHotRow(t, 40, 1)
	var total, used uint64
	for i := range st.Workers {
		n := st.Workers[i].Batches.Load()
		total += n
		if n > 0 {
			used++
		}
	}
	if total < 40 || used > 2 {
		t.Fatalf("%d batches on %d workers: a chain went round the workers", total, used)
	}
	if st.Chained.Load() == 0 {
		t.Fatal("no batch was prepared while the one before it applied")
	}
}

// replayHotRow replays n updates of one row, each waiting for the one
// before, with 4 workers and batches of at most maxBatch, and compares.
func replayHotRow(t *testing.T, n, maxBatch int) *Stats {
	t.Helper()
	p := newPair(t)
	p.src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.hot (id INT PRIMARY KEY, n INT)", "INSERT INTO app.hot VALUES (1, 0)")
	for range n {
		p.src.ExecT(t, "UPDATE app.hot SET n = n + 1 WHERE id = 1")
	}
	st, err := p.replay(t, runOpts{workers: 4, maxBatch: maxBatch, mode: scheduler.ModeWriteset})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	return st
}
