package apply

import "testing"

// TestLargeBatchCommitsWithItsRows: a batch of 1 MiB or more at the head
// sends its rows with its position and COMMIT when no other domain's
// commit could wait for it: one worker, or several with one GTID domain in
// flight and a batch of at most 4 MiB (order entry, pinned: one round trip
// per batch instead of two). Both end equal to the source. (With another
// domain in flight, or a longer transaction, the rows go first, so that
// the position lock does not hold back another domain's commits while
// they apply: TestFlushFirst, TestDomainsCommitIndependently.)
func TestLargeBatchCommitsWithItsRows(t *testing.T) {
	for _, c := range []struct {
		workers  int
		together bool // the rows' round trip also holds the COMMIT
	}{{1, true}, {2, true}} {
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

// TestFlushFirst: which batches send their rows before they take the
// position lock.
func TestFlushFirst(t *testing.T) {
	for _, c := range []struct {
		name                    string
		atHead                  bool
		bytes                   int
		single, oneDomain, want bool
	}{
		{"not at the head: rows before the wait", false, 100, false, true, true},
		{"not at the head, one worker", false, 100, true, true, true},
		{"small at the head", true, flushFirstBytes - 1, false, false, false},
		{"large at the head, another domain in flight", true, flushFirstBytes, false, false, true},
		{"large at the head, one domain", true, flushFirstBytes, false, true, false},
		{"a merged batch's most at the head, one domain", true, oneDomainFlushBytes, false, true, false},
		{"a long transaction at the head, one domain", true, oneDomainFlushBytes + 1, false, true, true},
		{"a long transaction at the head, one worker", true, 64 << 20, true, false, false},
		{"large at the head, one worker", true, flushFirstBytes, true, false, false},
	} {
		if got := flushFirst(c.atHead, c.bytes, c.single, c.oneDomain); got != c.want {
			t.Errorf("%s: flushFirst = %v, want %v", c.name, got, c.want)
		}
	}
}
