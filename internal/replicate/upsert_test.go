package replicate

import (
	"strings"
	"testing"
)

// TestUpsertRunsApplyAsUpdates: runs of updates that keep the key and
// change no foreign-key column are written as multi-row upserts (rowsql);
// on a real target they must do what the source's UPDATEs did: a child row
// the source wrote with foreign-key checks off (whose parent is missing)
// is updated, not refused; ON UPDATE columns take the source's value; a
// row updated twice ends as its last image; foreign-key and unique-key
// column changes, key changes and cascades keep working. A row missing on
// the target stops the stream with the table named instead of being
// inserted.
func TestUpsertRunsApplyAsUpdates(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "ups")
	defs := []string{"CREATE DATABASE ups",
		"CREATE TABLE ups.parent (id INT PRIMARY KEY, name VARCHAR(20), code VARCHAR(10) UNIQUE)",
		`CREATE TABLE ups.child (id INT PRIMARY KEY, parent_id INT, v INT NOT NULL, note VARCHAR(20),
			ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
			FOREIGN KEY (parent_id) REFERENCES ups.parent (id) ON DELETE CASCADE ON UPDATE CASCADE)`}
	e.src.ExecT(t, defs...)
	e.dst.ExecT(t, defs...)
	start := gtidPos(t, e.src)
	e.src.ExecT(t,
		"INSERT INTO ups.parent SELECT seq, CONCAT('p', seq), CONCAT('c', seq) FROM ups.seq_1_to_4",
		"INSERT INTO ups.child (id, parent_id, v) SELECT seq, 1 + seq % 4, seq FROM ups.seq_1_to_40",
		"SET SESSION foreign_key_checks = 0",
		"INSERT INTO ups.child (id, parent_id, v) VALUES (41, 999, 0)",
		"SET SESSION foreign_key_checks = 1",
		"SET TIMESTAMP = 1700000000.123456",
		"UPDATE ups.child SET v = v + 1", // one run of 41 rows, the orphan among them
		"SET TIMESTAMP = DEFAULT",
		"BEGIN", "UPDATE ups.child SET v = 100 WHERE id = 7", "UPDATE ups.child SET v = 200, note = 'twice' WHERE id = 7",
		"UPDATE ups.child SET parent_id = 2 WHERE id = 8", "UPDATE ups.child SET note = 'after' WHERE id BETWEEN 9 AND 12", "COMMIT",
		"UPDATE ups.parent SET name = CONCAT(name, ' renamed')", // a run keeping the unique key
		"BEGIN", "UPDATE ups.parent SET code = 'tmp' WHERE id = 2", "UPDATE ups.parent SET code = 'c2' WHERE id = 4",
		"UPDATE ups.parent SET code = 'c4' WHERE id = 2", "COMMIT",
		"UPDATE ups.parent SET id = 10 WHERE id = 3", // cascades into child
		"DELETE FROM ups.parent WHERE id = 1",        // cascades into child
		"UPDATE ups.child SET note = 'last' WHERE parent_id = 10")
	end := gtidPos(t, e.src)
	if err, _ := e.runStream(t, "ups", start, end); err != nil {
		t.Fatalf("updates the source applied were refused: %v", err)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "ups")

	// A row missing on the target: the upsert would insert it; the guard
	// must stop the stream instead. (Row 20 went with parent 1.)
	e.dst.ExecT(t, "DELETE FROM ups.child WHERE id = 21")
	e.src.ExecT(t, "UPDATE ups.child SET v = v + 1 WHERE id BETWEEN 18 AND 22")
	err, _ := e.runStream(t, "ups", end, gtidPos(t, e.src))
	if err == nil {
		t.Fatal("a run of updates over a row missing on the target was applied")
	}
	if !strings.Contains(err.Error(), "`ups`.`child`") {
		t.Errorf("error %q does not name the table", err)
	}
	var n int
	if err := e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM ups.child WHERE id = 21").Scan(&n); err != nil || n != 0 {
		t.Errorf("the missing row: %d rows (%v); want none written", n, err)
	}
}

// TestLongUniqueKey: a unique key over a TEXT column is a long unique key
// in MariaDB, kept by a hidden hash column (DB_ROW_HASH_1) that the
// binlog's table map lists and information_schema does not. MariaDB's
// replica applies such rows; binlane refused the table as having a column
// missing on the target.
func TestLongUniqueKey(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "lu")
	defs := []string{"CREATE DATABASE lu", "CREATE TABLE lu.doc (id INT PRIMARY KEY, body TEXT, n INT, UNIQUE KEY body (body))"}
	e.src.ExecT(t, defs...)
	e.dst.ExecT(t, defs...)
	start := gtidPos(t, e.src)
	e.src.ExecT(t,
		"INSERT INTO lu.doc SELECT seq, REPEAT(CONCAT('doc ', seq, ' '), 200), 0 FROM lu.seq_1_to_50",
		"UPDATE lu.doc SET n = n + 1",
		"BEGIN", "UPDATE lu.doc SET body = 'moved' WHERE id = 1", "UPDATE lu.doc SET body = REPEAT('doc 1 ', 200) WHERE id = 2", "COMMIT",
		"DELETE FROM lu.doc WHERE id > 40")
	end := gtidPos(t, e.src)
	if err, _ := e.runStream(t, "lu", start, end); err != nil {
		t.Fatalf("a table with a long unique key: %v", err)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "lu")
}
