package apply

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/sandbox"
)

// loadTable is a collapsible table with a column of every kind a LOAD
// DATA file carries (plan.Table.Loadable), filled with 1,500 rows whose
// strings hold the bytes the file escapes.
func loadTable(t *testing.T, p *pair) {
	p.src.ExecT(t,
		"CREATE DATABASE app",
		`CREATE TABLE app.bulk (id BIGINT PRIMARY KEY, i INT, u INT UNSIGNED, y YEAR, d DECIMAL(12,3), f FLOAT, g DOUBLE,
			dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP(2) NULL, s VARCHAR(40) CHARACTER SET utf8mb4,
			c CHAR(5) CHARACTER SET latin1, b VARBINARY(20), blb BLOB, txt TEXT, n INT NULL, gen INT AS (i + 1) VIRTUAL)`,
		`INSERT INTO app.bulk (id, i, u, y, d, f, g, dt, tm, dtm, ts, s, c, b, blb, txt, n)
			SELECT seq, -seq, seq * 7, 1901 + seq % 250, seq / 8, seq / 3, seq / 7, '2020-01-01' + INTERVAL seq DAY,
			SEC_TO_TIME(seq * 37 - 40000.5), '2001-02-03 04:05:06.789012' + INTERVAL seq MINUTE,
			'2001-02-03 04:05:06.78' + INTERVAL seq HOUR, CONCAT('ä\t', seq, '\n\\N'), 'é', UNHEX(CONCAT('00095C0A', HEX(seq))),
			CONCAT('\\', seq, '\0'), IF(seq % 2, NULL, '\\N'), IF(seq % 3, seq, NULL) FROM app.seq_1_to_1500`,
	)
}

// TestBulkUpdateLoadsReplace: a 1,500-row INSERT and UPDATE of a loadable
// table reach the target as LOAD DATA and LOAD DATA ... REPLACE (the
// target counts the loads) and leave it equal to the source, NULLs
// included. Rows 1-10, changed and changed back by the transaction after
// the UPDATE (merged with it), end as they were: left to the upsert.
func TestBulkUpdateLoadsReplace(t *testing.T) {
	p := newPair(t)
	loadTable(t, p)
	p.src.ExecT(t,
		`UPDATE app.bulk SET i = i - 1, u = u + 1, y = IF(y = 2155, 1901, y + 1), d = -d, f = f * 2, g = -g, dt = dt + INTERVAL 1 DAY,
			tm = SUBTIME(tm, '01:00:00'), dtm = dtm + INTERVAL 1 SECOND, ts = IF(id % 5, ts + INTERVAL 1 SECOND, NULL),
			s = CONCAT(s, '\\'), c = 'ü\t', b = REVERSE(b), blb = CONCAT(blb, '\n'), txt = IF(txt IS NULL, 'x\ty', NULL), n = NULL
			WHERE id > 10`,
		"BEGIN", "UPDATE app.bulk SET i = i + 100 WHERE id <= 10", "UPDATE app.bulk SET i = i - 100 WHERE id <= 10", "COMMIT",
	)
	loads := comLoad(t, p)
	stats, err := p.replay(t, runOpts{workers: 1, maxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if got := comLoad(t, p) - loads; got < 2 {
		t.Errorf("%d loads on the target, want 2 at least: the bulk insert's and the bulk update's", got)
	}
	if n := stats.RedoneOneByOne.Load(); n != 0 {
		t.Errorf("%d batches redone one statement at a time: a load failed", n)
	}
}

// TestBulkUpdateLoadMissingRow: a row the bulk update changes is missing
// on the target; the load counts it short and the stream stops naming the
// statement, as the upsert's guard would.
func TestBulkUpdateLoadMissingRow(t *testing.T) {
	p := newPair(t)
	loadTable(t, p)
	p.src.ExecT(t,
		"SET sql_log_bin = 0", "INSERT INTO app.bulk (id, i) VALUES (9999, 1)", "SET sql_log_bin = 1",
		"UPDATE app.bulk SET i = i + 1",
	)
	wantRowCountError(t, p, "bulk")
}

// TestLoadWarningGuard: a value LOAD DATA LOCAL cannot store as it is
// (text into an INT column) fails the load in a strict sql_mode, as apply's
// sessions have; in any other it stores it with a warning, and the warning
// count stays where rowsql's guard after the load reads it, past the
// row-count guard between them: the guard fails the commit.
func TestLoadWarningGuard(t *testing.T) {
	s := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	s.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.w (id INT PRIMARY KEY, v INT)", "INSERT INTO d.w VALUES (1, 5)")
	ctx := context.Background()
	conn, err := s.OpenT(t, "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mysql.RegisterReaderHandler("binlane-warn", func() io.Reader { return strings.NewReader("1\tabc\n") })
	defer mysql.DeregisterReaderHandler("binlane-warn")
	const load = "LOAD DATA LOCAL INFILE 'Reader::binlane-warn' REPLACE INTO TABLE d.w CHARACTER SET binary (id, v)"
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode='STRICT_ALL_TABLES'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, load); err == nil {
		t.Fatal("a strict session loaded text into an INT column")
	}
	for _, q := range []string{
		"SET SESSION sql_mode=''",
		"SET @binlane_bad=0",
		load,
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>2)",
		"SET @binlane_bad=@binlane_bad+(@@warning_count<>0)", // rowsql's loadWarnings
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var bad int
	if err := conn.QueryRowContext(ctx, "SELECT @binlane_bad").Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 1 {
		t.Fatalf("guard %d after a load that warned, want 1 (the row count matched, the warning did not pass)", bad)
	}
}

// comLoad is the target's count of LOAD DATA statements run.
func comLoad(t *testing.T, p *pair) int64 {
	t.Helper()
	var name string
	var n int64
	if err := p.dst.OpenT(t, "").QueryRow("SHOW GLOBAL STATUS LIKE 'Com_load'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
