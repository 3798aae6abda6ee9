package apply

import "testing"

// TestLargeBatchCommitsWithItsRows: a batch of 1 MiB or more at the head
// sends its last rows before it takes the position lock, and its position
// and COMMIT in a round trip of their own, so that the lock does not hold
// back other workers' commits while the rows apply. With one worker there
// is nobody to hold back: the rows go with the COMMIT, and the batch
// rendered ahead is rendered while they apply (order entry, pinned: one
// round trip per batch instead of two). Both end equal to the source.
func TestLargeBatchCommitsWithItsRows(t *testing.T) {
	for _, c := range []struct {
		workers  int
		together bool // the rows' round trip also holds the COMMIT
	}{{1, true}, {2, false}} {
		p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.w (id INT PRIMARY KEY, pad VARCHAR(1600))")
		// 900 rows of 1,500 bytes: 1.35 MB of binlog, one transaction, in a
		// multi-row INSERT (fewer rows than a LOAD DATA takes).
		p.src.ExecT(t, "INSERT INTO app.w SELECT seq, REPEAT(CHAR(65 + seq % 26), 1500) FROM app.seq_1_to_900")
		logQueries(t, p)
		if _, err := p.replay(t, runOpts{workers: c.workers, maxBatch: 16, start: start}); err != nil {
			t.Fatalf("%d workers: %v", c.workers, err)
		}
		p.compare(t, "app")
		var n int
		if err := p.dst.OpenT(t, "").QueryRow(`SELECT COUNT(*) FROM mysql.general_log
			WHERE argument LIKE 'START TRANSACTION;%INSERT INTO ` + "`app`.`w`" + `%COMMIT%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if together := n == 1; together != c.together {
			t.Errorf("%d workers: the rows' round trip holds the COMMIT: %v, want %v", c.workers, together, c.together)
		}
	}
}
