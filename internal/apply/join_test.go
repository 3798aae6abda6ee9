package apply

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlerr"
)

// joinTable is a collapsible table with an integer key and no BLOB or TEXT
// column (rowsql's join updates), and an ON UPDATE column: keys -1999 to
// 1000 without a gap, then every third from 9003.
func joinTable(t *testing.T, p *pair) {
	p.src.ExecT(t,
		"CREATE DATABASE app",
		`CREATE TABLE app.h (id BIGINT PRIMARY KEY, i INT, u INT UNSIGNED, d DECIMAL(12,3), g DOUBLE, dt DATE,
			dtm DATETIME(6), ts TIMESTAMP(2) NULL, up TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
			s VARCHAR(40) CHARACTER SET utf8mb4, c CHAR(5) CHARACTER SET latin1, b VARBINARY(20), n INT NULL, gen INT AS (i + 1) VIRTUAL,
			KEY i (i))`,
		`INSERT INTO app.h (id, i, u, d, g, dt, dtm, ts, up, s, c, b, n)
			SELECT IF(seq <= 3000, CAST(seq AS SIGNED) - 2000, seq * 3), -CAST(seq AS SIGNED), seq * 7, seq / 8, seq / 7, '2020-01-01' + INTERVAL seq DAY,
			'2001-02-03 04:05:06.789012' + INTERVAL seq MINUTE, '2001-02-03 04:05:06.78' + INTERVAL seq HOUR,
			'2002-01-01 00:00:00.123', CONCAT('ä\t', seq, '\n\\N'), 'é', UNHEX(CONCAT('00095C0A', HEX(seq))),
			IF(seq % 3, seq, NULL) FROM app.seq_1_to_4000`,
	)
}

// TestBulkUpdateJoins: an UPDATE of 2,501 rows of consecutive keys of a
// table with an integer key and no BLOB or TEXT reaches the target as a
// temporary table joined into it (the target counts multi-table UPDATEs),
// and leaves it equal to the source: NULLs, escapes, signed keys and the
// ON UPDATE column included. Rows changed and changed back in the same
// batch are left as they are; rows with gaps between their keys are
// upserted.
func TestBulkUpdateJoins(t *testing.T) {
	p := newPair(t)
	joinTable(t, p)
	p.src.ExecT(t,
		`UPDATE app.h SET i = i - 1, u = u + 1, d = -d, g = g * 2, dt = dt + INTERVAL 1 DAY, dtm = dtm + INTERVAL 1 SECOND,
			ts = IF(id % 5, ts + INTERVAL 1 SECOND, NULL), s = CONCAT(s, '\\'), c = 'ü\t', b = REVERSE(b), n = IF(n IS NULL, 7, NULL)
			WHERE id BETWEEN -1500 AND 1000`,
		"BEGIN", "UPDATE app.h SET i = i + 100 WHERE id < -1500", "UPDATE app.h SET i = i - 100 WHERE id < -1500", "COMMIT",
		"UPDATE app.h SET n = 1 WHERE id > 9000 AND id % 2 = 0",
	)
	before := comStatus(t, p, "Com_update_multi")
	stats, err := p.replay(t, runOpts{workers: 4, maxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if got := comStatus(t, p, "Com_update_multi") - before; got < 1 {
		t.Errorf("%d multi-table UPDATEs on the target, want the bulk update's join at least", got)
	}
	if n := stats.RedoneOneByOne.Load(); n != 0 {
		t.Errorf("%d batches redone one statement at a time: a join failed", n)
	}
	// The target logs rows (binlog_format ROW): its binlog, which a
	// reverse stream or a replica of the target reads, holds the join's
	// row changes and nothing of the temporary table (no statement, no
	// table map; an Annotate_rows event, which appliers skip, may quote
	// the UPDATE where binlane lacks BINLOG ADMIN to turn them off).
	var logs int
	if err := p.dst.OpenT(t, "").QueryRow("SELECT @@log_bin AND @@binlog_format = 'ROW'").Scan(&logs); err != nil || logs != 1 {
		t.Fatalf("the target does not log rows (%v): the test needs it", err)
	}
	updates := 0
	for _, file := range sandbox.QueryLinesT(t, p.dst.OpenT(t, ""), "SHOW BINARY LOGS") {
		name, _, _ := strings.Cut(file, " | ")
		for _, line := range sandbox.QueryLinesT(t, p.dst.OpenT(t, ""), "SHOW BINLOG EVENTS IN '"+name+"'") {
			if strings.Contains(line, "_binlane_rows") && !strings.Contains(line, "| Annotate_rows |") {
				t.Errorf("the target's binlog mentions the temporary table: %s", line)
			}
			if strings.Contains(line, "Update_rows") {
				updates++
			}
		}
	}
	if updates == 0 {
		t.Error("no row updates in the target's binlog: the check above saw nothing")
	}
}

// TestBulkUpdateJoinColumns: a bulk update of one column reaches the
// target as a join that loads and assigns that column and the ON UPDATE
// one only (the target's general log shows the UPDATE), and leaves the
// target equal to the source.
func TestBulkUpdateJoinColumns(t *testing.T) {
	p := newPair(t)
	joinTable(t, p)
	p.src.ExecT(t, "UPDATE app.h SET u = u + 5 WHERE id BETWEEN -1999 AND 1000")
	logQueries(t, p)
	if _, err := p.replay(t, runOpts{workers: 2, maxBatch: 8}); err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if n := roundTrips(t, p, "SET `binlane_t`.`u`=`binlane_v`.`u`,`binlane_t`.`up`=`binlane_v`.`up` WHERE `binlane_t`.`id` BETWEEN -1999 AND 1000;"); n != 1 {
		t.Errorf("%d round trips with the join of u and up, want 1", n)
	}
}

// logQueries turns the target's general log on, into mysql.general_log.
func logQueries(t *testing.T, p *pair) {
	p.dst.ExecT(t, "SET GLOBAL log_output = 'TABLE'", "SET GLOBAL general_log = 1")
}

// roundTrips counts the transactions' round trips the target's general
// log holds (logQueries) that contain text.
func roundTrips(t *testing.T, p *pair, text string) int {
	t.Helper()
	var n int
	if err := p.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE CONCAT('START TRANSACTION;%', ?, '%')",
		text).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBulkUpdateJoinMissingRow: a row the bulk update changes, in the
// middle of its run of keys, is missing on the target; the join finds one
// row fewer than it loaded and the stream stops naming the statement, as
// the upsert's guard would.
func TestBulkUpdateJoinMissingRow(t *testing.T) {
	p := newPair(t)
	joinTable(t, p)
	p.src.ExecT(t,
		"SET sql_log_bin = 0", "DELETE FROM app.h WHERE id = 1001", "INSERT INTO app.h (id, i) VALUES (1001, 1)", "SET sql_log_bin = 1",
		"UPDATE app.h SET i = i + 1 WHERE id BETWEEN -1500 AND 1001",
	)
	wantRowCountError(t, p, "`h`")
}

// wantRowCountError replays the source with one worker and merged
// batches, and wants the stream to stop with a row-count error naming
// table.
func wantRowCountError(t *testing.T, p *pair, table string) {
	t.Helper()
	_, err := p.replay(t, runOpts{workers: 1, maxBatch: 8})
	var rc *rowsql.RowCountError
	if !errors.As(err, &rc) {
		t.Fatalf("replay: %v; want a row-count error", err)
	}
	if !strings.Contains(err.Error(), table) {
		t.Errorf("the error does not name the table: %v", err)
	}
}

// TestBulkDeleteRanges: a DELETE of 2,501 rows of consecutive keys of a
// table with an integer key reaches the target as one DELETE of the key
// range (rowsql's range deletes; the target's general log shows it), rows
// with gaps between their keys in IN lists, and the target ends equal to
// the source. Rows of the range missing on the target stop the stream
// with a row-count error naming the table.
func TestBulkDeleteRanges(t *testing.T) {
	p := newPair(t)
	joinTable(t, p)
	p.src.ExecT(t,
		"DELETE FROM app.h WHERE id BETWEEN -1500 AND 1000",
		"DELETE FROM app.h WHERE id > 9000 AND id % 2 = 0",
	)
	logQueries(t, p)
	stats, err := p.replay(t, runOpts{workers: 4, maxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if n := roundTrips(t, p, "DELETE FROM `app`.`h` WHERE `id` BETWEEN -1500 AND 1000;"); n != 1 {
		t.Errorf("%d round trips with the range's DELETE, want 1", n)
	}
	if n := stats.RedoneOneByOne.Load(); n != 0 {
		t.Errorf("%d batches redone one statement at a time: a range delete failed", n)
	}

	p = newPair(t)
	joinTable(t, p)
	p.src.ExecT(t,
		"SET sql_log_bin = 0", "DELETE FROM app.h WHERE id = 1001", "INSERT INTO app.h (id, i) VALUES (1001, 1)", "SET sql_log_bin = 1",
		"DELETE FROM app.h WHERE id BETWEEN -1500 AND 1001",
	)
	wantRowCountError(t, p, "`h`")
}

func comStatus(t *testing.T, p *pair, name string) int64 {
	t.Helper()
	var got string
	var n int64
	if err := p.dst.OpenT(t, "").QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&got, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJoinRangeLocks: what rowsql's join updates and range deletes rely
// on (join.go, keyrun.go). The UPDATE's range scan over the target table
// locks every row it reads until the commit, also one the join skips, so
// a run with a gap would lock a row the batch does not change; over a run
// of consecutive keys READ COMMITTED locks nothing outside the range (no
// gap lock, not the row that ends the scan), for the join and for a
// DELETE of the range alike.
func TestJoinRangeLocks(t *testing.T) {
	s := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	s.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)", "INSERT INTO d.t SELECT seq, 0 FROM d.seq_1_to_10")
	ctx := context.Background()
	conn := func() *sql.Conn {
		c, err := s.OpenT(t, "").Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	exec := func(c *sql.Conn, qs ...string) error {
		for _, q := range qs {
			if _, err := c.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
	join := func(keys string) []string {
		return []string{"CREATE OR REPLACE TEMPORARY TABLE d.tmp (id INT PRIMARY KEY, v INT) ENGINE=MEMORY",
			"INSERT INTO d.tmp (id) VALUES " + keys, "UPDATE d.tmp SET v = 1",
			"UPDATE d.t `x` STRAIGHT_JOIN d.tmp `y` ON `x`.id = `y`.id SET `x`.v = `y`.v WHERE `x`.id BETWEEN 3 AND 6"}
	}
	for _, tc := range []struct {
		name         string
		stmts        []string
		free, locked []string
	}{
		{"join of 3-6", join("(3),(4),(5),(6)"), []string{"2", "7", "1", "10"}, []string{"6"}},
		{"join of 3, 4 and 6", join("(3),(4),(6)"), nil, []string{"5"}},
		{"delete of 3-6", []string{"DELETE FROM d.t WHERE id BETWEEN 3 AND 6"}, []string{"2", "7", "1", "10"}, []string{"3", "6"}},
	} {
		a, b := conn(), conn()
		if err := exec(a, append([]string{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "BEGIN"}, tc.stmts...)...); err != nil {
			t.Fatal(err)
		}
		if err := exec(b, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
			t.Fatal(err)
		}
		for _, id := range tc.free {
			if err := exec(b, "UPDATE d.t SET v = v + 1 WHERE id = "+id); err != nil {
				t.Errorf("%s: row %s outside the range: %v", tc.name, id, err)
			}
		}
		for _, id := range tc.locked {
			if err := exec(b, "UPDATE d.t SET v = v + 1 WHERE id = "+id); !sqlerr.Is(err, sqlerr.LockWaitTimeout) {
				t.Errorf("%s: row %s in the range: %v, want a lock wait timeout", tc.name, id, err)
			}
		}
		if err := exec(a, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRangeDeleteIgnoresStatistics: what rowsql's range deletes rely on
// (keyrun.go). On a table whose statistics count no rows (persistent
// statistics of the empty table, kept over a restart), MariaDB reads a
// DELETE of a key range by the primary key, where a DELETE ... IN of six
// keys scans the table (why Writer.deleteRows gives such a table one key
// per IN list).
func TestRangeDeleteIgnoresStatistics(t *testing.T) {
	s := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	s.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.h (id BIGINT PRIMARY KEY, c INT, KEY c (c)) STATS_PERSISTENT=1 STATS_AUTO_RECALC=0",
		"ANALYZE TABLE d.h", "INSERT INTO d.h SELECT seq, seq % 100 FROM d.seq_1_to_40000")
	if err := s.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	db := s.OpenT(t, "")
	var rows int64
	if err := db.QueryRow("SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 'h'").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("the statistics count %d rows (%v): the test needs 0", rows, err)
	}
	plan := func(q string) (access, key string) {
		var id int
		var selectType, table, possible, keyLen, ref, extra sql.NullString
		var n sql.NullInt64
		var k sql.NullString
		if err := db.QueryRow("EXPLAIN "+q).Scan(&id, &selectType, &table, &access, &possible, &k, &keyLen, &ref, &n, &extra); err != nil {
			t.Fatalf("EXPLAIN %s: %v", q, err)
		}
		return access, k.String
	}
	if access, key := plan("DELETE FROM d.h WHERE id BETWEEN 10001 AND 20000"); access != "range" || key != "PRIMARY" {
		t.Errorf("range delete: %s on %q, want a range on PRIMARY", access, key)
	}
	if access, _ := plan("DELETE FROM d.h WHERE id IN (5, 6, 7, 8, 9, 10)"); access != "ALL" {
		t.Logf("IN list of 6 keys: %s (a scan when this test was written)", access)
	}
}
