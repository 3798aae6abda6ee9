package apply

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/scheduler"
)

// driftPair prepares a table on both sides (not binlogged) and returns the
// source position before the test's changes.
func driftPair(t *testing.T, ddl ...string) (*pair, gtid.Set) {
	p := newPair(t)
	p.src.ExecT(t, append([]string{"SET SESSION sql_log_bin = 0"}, ddl...)...)
	p.dst.ExecT(t, ddl...)
	var pos string
	if err := p.src.OpenT(t, "").QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	start, err := gtid.ParseSet(pos)
	if err != nil {
		t.Fatal(err)
	}
	return p, start
}

// TestMergedUpsertDetectsMissingRow: when transactions are merged, the
// changed rows of a plain primary-key table are written with one upsert;
// a row missing on the target must still stop the stream with the row
// named (an upsert once recreated it silently, where the unmerged UPDATE
// reports it).
func TestMergedUpsertDetectsMissingRow(t *testing.T) {
	for _, maxBatch := range []int{1, 16} {
		p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.h (id INT PRIMARY KEY, v INT)",
			"INSERT INTO app.h SELECT seq, 0 FROM app.seq_1_to_10")
		for i := 1; i <= 10; i++ {
			p.src.ExecT(t, "UPDATE app.h SET v = v + 1 WHERE id = "+itoa(i))
		}
		p.dst.ExecT(t, "DELETE FROM app.h WHERE id = 5") // drift
		_, err := p.replay(t, runOpts{workers: 2, maxBatch: maxBatch, mode: scheduler.ModeWriteset, start: start})
		if err == nil {
			t.Fatalf("max batch %d: a row missing on the target went unnoticed", maxBatch)
		}
		for _, want := range []string{"`app`.`h`", "id=5", "affected 0 rows on the target, expected 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("max batch %d: error lacks %q: %v", maxBatch, want, err)
			}
		}
		var n int
		p.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM app.h WHERE id = 5").Scan(&n)
		if n != 0 {
			t.Errorf("max batch %d: the missing row was recreated", maxBatch)
		}
	}
}

// TestMergedReplaceRowAlreadyFinal: a merged batch writes the changed rows
// of a table whose rows it writes whole with one REPLACE that must count 2
// per row (rowsql/replace.go). A row the target already holds as the
// batch leaves it counts 1: the guard fails the batch, which is applied
// again statement by statement, where the UPDATE finds its row (matched
// rows) as the upsert did: the stream goes on and ends equal.
func TestMergedReplaceRowAlreadyFinal(t *testing.T) {
	p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.h (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.h SELECT seq, 0 FROM app.seq_1_to_10")
	for i := 1; i <= 10; i++ {
		p.src.ExecT(t, "UPDATE app.h SET v = v + 1 WHERE id = "+itoa(i))
	}
	p.dst.ExecT(t, "UPDATE app.h SET v = 1 WHERE id = 5") // drift: already the last image
	replaces := func() (n int) {
		var name string
		if err := p.dst.OpenT(t, "").QueryRow("SHOW GLOBAL STATUS LIKE 'Com_replace'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := replaces()
	if _, err := p.replay(t, runOpts{workers: 1, maxBatch: 16, mode: scheduler.ModeWriteset, start: start}); err != nil {
		t.Fatal(err)
	}
	if replaces() == before {
		t.Error("the merged batch's changed rows were not written with REPLACE")
	}
	p.compare(t, "app")
}

// TestDuplicateNamedNotRetried: a row the target has and the source is
// about to insert is real drift, not a conflict between our own
// transactions: the stream stops once the batch is first in line, naming
// the table and the row (it once burned 20 retries in under a second and
// named neither).
func TestDuplicateNamedNotRetried(t *testing.T) {
	// One worker: the merged batch of 33-40 fails first in line, so
	// diagnosis must name row 37 of it, not its first row.
	for _, workers := range []int{1, 4} {
		p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.d (id INT PRIMARY KEY, v INT)")
		p.dst.ExecT(t, "INSERT INTO app.d VALUES (37, 0)") // drift
		for i := 1; i <= 60; i++ {
			p.src.ExecT(t, "INSERT INTO app.d VALUES ("+itoa(i)+", 1)")
		}
		st, err := p.replay(t, runOpts{workers: workers, maxBatch: 8, mode: scheduler.ModeWriteset, start: start})
		if err == nil {
			t.Fatalf("%d workers: a duplicate row went unnoticed", workers)
		}
		for _, want := range []string{"`app`.`d`", "id=37", "Duplicate entry '37'"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%d workers: error lacks %q: %v", workers, want, err)
			}
		}
		if strings.Contains(err.Error(), "retries") {
			t.Errorf("%d workers: the drift was retried as if it were a transient conflict: %v", workers, err)
		}
		t.Logf("%d workers: retries before stopping: %d", workers, retries(st))
	}
}

// TestBatchBytesBound: merged batches are bounded in bytes, counted from
// what each transaction holds (transactions were once counted as 256
// bytes, so 40 transactions of 570 KB went in 2 batches under a 256 KiB
// bound).
func TestBatchBytesBound(t *testing.T) {
	p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.b (id INT PRIMARY KEY, pad MEDIUMBLOB)")
	for i := 1; i <= 40; i++ {
		p.src.ExecT(t, "INSERT INTO app.b VALUES ("+itoa(i)+", REPEAT('x', 570000))")
	}
	st, err := p.replay(t, runOpts{workers: 1, maxBatch: 128, maxBatchBytes: 256 << 10, start: start})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Workers[0].Batches.Load(); n < 40 {
		t.Fatalf("40 transactions of 570 KB went in %d batches under a 256 KiB bound", n)
	}
	p.compare(t, "app")
}

// TestRowStatementDetectsMissingRow: rows of a table that cannot be merged
// (a unique secondary key) are one statement each, sent in compound
// statements with a guard after each on a MariaDB target; a row missing
// on the target, early or late in a large transaction (past the first
// blocks), still stops the stream with the row named and nothing of the
// transaction committed.
func TestRowStatementDetectsMissingRow(t *testing.T) {
	for _, missing := range []int{5, 150} {
		p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.u (id INT PRIMARY KEY, e INT UNIQUE, v INT)",
			"INSERT INTO app.u SELECT seq, seq, 0 FROM app.seq_1_to_200")
		stmts := []string{"BEGIN"}
		for i := 1; i <= 200; i++ {
			stmts = append(stmts, "UPDATE app.u SET v = v + 1 WHERE id = "+itoa(i))
		}
		p.src.ExecT(t, append(stmts, "COMMIT")...)
		p.dst.ExecT(t, "DELETE FROM app.u WHERE id = "+itoa(missing)) // drift
		_, err := p.replay(t, runOpts{workers: 2, maxBatch: 16, mode: scheduler.ModeWriteset, start: start})
		if err == nil {
			t.Fatalf("row %d: a row missing on the target went unnoticed", missing)
		}
		for _, want := range []string{"`app`.`u`", "id=" + itoa(missing), "affected 0 rows on the target, expected 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("row %d: error lacks %q: %v", missing, want, err)
			}
		}
		var changed int
		p.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM app.u WHERE v <> 0").Scan(&changed)
		if changed != 0 {
			t.Errorf("row %d: %d rows of the failed transaction committed", missing, changed)
		}
	}
}
