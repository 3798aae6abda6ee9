package replicate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/throttle"
	"github.com/binlane/binlane/internal/workload"
)

// seedCopy creates the workload's schema on the source with enough rows
// that the copy runs while the workload writes: wl.audit (chunked by its
// key), wl.kv (a case-insensitive key: one pass) and wl.log (no key: one
// pass), below the accounts/orders/items chain of foreign keys.
func (e *env) seedCopy(t *testing.T, ctx context.Context, auditRows int) {
	t.Helper()
	db := e.src.OpenT(t, "")
	if err := workload.Setup(ctx, db); err != nil {
		t.Fatal(err)
	}
	e.src.ExecT(t,
		"INSERT INTO wl.audit (order_id, what) SELECT seq, CHAR(65 + seq % 26) FROM wl.seq_1_to_"+strconv.Itoa(auditRows),
		"INSERT INTO wl.log SELECT seq, CONCAT('l', seq), seq / 7 FROM wl.seq_1_to_3000",
		"INSERT INTO wl.kv (k, v, f, b, ch) SELECT CONCAT('Key', seq), JSON_OBJECT('n', seq), seq / 3, seq % 4096, 'é' FROM wl.seq_1_to_2000")
}

// catchUpAndVerify replicates from the stream's saved position to the
// source's current one and compares the workload schema.
func (e *env) catchUpAndVerify(t *testing.T, ctx context.Context) {
	t.Helper()
	cfg := e.copyConfig(t)
	cfg.StopAtGTID = gtidPos(t, e.src)
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}

func (e *env) copyConfig(t *testing.T) Config {
	cfg := e.config(t, 4)
	cfg.StartGTID = ""
	cfg.Copy = CopyConfig{Mode: "auto", Workers: 3, ChunkTime: 30 * time.Millisecond}
	return cfg
}

// TestCopyUnderLoad: `binlane copy` into an empty target while the source
// takes a write load with conflicts and DDL, then replicate from where it
// stopped; the target ends equal, row by row.
func TestCopyUnderLoad(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e.seedCopy(t, ctx, 30000)
	e.copyUnderLoad(t, ctx, workload.Config{Seed: 21, Sessions: 4, Duration: 8 * time.Second, DDL: true, Ledger: true}, nil)
}

// copyUnderLoad runs `binlane copy` into the empty target while the
// workload (and side, when set, until its context ends) writes on the
// source, checks every table was copied, then replicates the rest and
// compares the workload schema.
func (e *env) copyUnderLoad(t *testing.T, ctx context.Context, wl workload.Config, side func(ctx context.Context)) {
	t.Helper()
	wlCtx, stopLoad := context.WithCancel(ctx)
	wlDone := make(chan struct{})
	go func() {
		defer close(wlDone)
		e.workload(t, wlCtx, wl)
	}()
	if side != nil {
		sideDone := make(chan struct{})
		go func() {
			defer close(sideDone)
			side(wlCtx)
		}()
		defer func() { stopLoad(); <-sideDone }()
	}
	time.Sleep(500 * time.Millisecond) // the copy starts under load
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	dst := e.dst.OpenT(t, "")
	tables, err := position.LoadCopy(ctx, dst, "t")
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, c := range tables {
		if c.State != position.CopyDone {
			t.Errorf("copy exited with %s.%s %s", c.Schema, c.Table, c.State)
		}
		rows += c.Rows
	}
	if rows < 30000 {
		t.Errorf("copied %d rows, want at least 30000", rows)
	}
	t.Logf("copied %d rows of %d tables", rows, len(tables))
	stopLoad()
	<-wlDone
	// Replicate the rest from where the copy stopped.
	e.catchUpAndVerify(t, ctx)
}

// TestCopyResumes stops a copy in the middle (the source idle) and runs it
// again: the second run resumes from the checkpoints and finishes.
func TestCopyResumes(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.seedCopy(t, ctx, 40000)
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	dst := e.dst.OpenT(t, "")
	runCtx, stop := context.WithCancel(ctx)
	go func() { // stop once the first chunk committed
		for runCtx.Err() == nil {
			var n sql.NullInt64
			dst.QueryRow("SELECT SUM(rows_copied) FROM binlane.copy").Scan(&n)
			if n.Int64 > 0 {
				stop()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	err := Run(runCtx, cfg)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	before, err := position.LoadCopy(ctx, dst, "t")
	if err != nil {
		t.Fatal(err)
	}
	var copied int64
	done := 0
	for _, c := range before {
		copied += c.Rows
		if c.State == position.CopyDone {
			done++
		}
	}
	t.Logf("after the first run: %d rows, %d of %d tables done", copied, done, len(before))
	if copied == 0 || done == len(before) {
		t.Fatalf("the first run should stop in the middle of the copy")
	}
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}

// TestCopyThrottle holds the copy back with a Threads_running limit the
// source exceeds (a session sleeping in a query), shows why, and lets it
// go on when the limit is lifted while it runs.
func TestCopyThrottle(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.seedCopy(t, ctx, 5000)
	sleeper := e.src.OpenT(t, "")
	go sleeper.ExecContext(ctx, "SELECT SLEEP(60)") // Threads_running stays at 2 or more
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	limits := throttle.NewLimits(1, 0)
	cfg.Throttle = throttle.New(throttle.Config{Source: e.src.OpenT(t, ""), Limits: limits})
	obs := &Observer{}
	cfg.Observer = obs
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	var why string
	deadline := time.Now().Add(30 * time.Second)
	for why == "" && time.Now().Before(deadline) {
		for _, p := range obs.Copy() {
			if p.Throttled != "" {
				why = p.Throttled
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(why, "Threads_running") {
		t.Fatalf("the copy was not throttled (reason %q)", why)
	}
	time.Sleep(time.Second)
	for _, p := range obs.Copy() {
		if p.Rows > 0 {
			t.Errorf("table %s copied %d rows while throttled", p.Table, p.Rows)
		}
	}
	limits.Set(0, 0) // what SIGHUP does with a config file without the limit
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, p := range obs.Copy() {
		if p.Throttled != "" || !p.Done {
			t.Errorf("table %s after the copy: %+v", p.Table, p)
		}
	}
	e.verifyEqual(t)
}

// TestCopyRaces forces the race the copy is built around: right after a
// chunk is read in its snapshot, before it goes into the stream, the source
// changes rows of that chunk (an update, a delete), a row of the next chunk
// (not copied yet), and deletes a parent whose children the chunk just
// copied (the cascade to the children is not in the binlog: the target's
// own foreign key must do it, after the chunk). Nothing may be lost or
// resurrected: verify equal. Once with chunks placed by GTID state (a quiet
// source) and once by binlog coordinate (a busy one).
func TestCopyRaces(t *testing.T) {
	for _, byCoord := range []bool{false, true} {
		t.Run(fmt.Sprintf("by-coordinate=%v", byCoord), func(t *testing.T) { copyRaces(t, byCoord) })
	}
}

func copyRaces(t *testing.T, byCoord bool) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	src := e.src.OpenT(t, "")
	if err := workload.Setup(ctx, src); err != nil {
		t.Fatal(err)
	}
	if err := workload.SeedBulk(ctx, src, 6000); err != nil {
		t.Fatal(err)
	}
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.ByCoordinate = byCoord
	var orders, items atomic.Int32
	raced := map[string]int{}
	var mu sync.Mutex
	exec := func(ctx context.Context, what string, qs ...string) error {
		for _, q := range qs {
			res, err := src.ExecContext(ctx, q)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", what, q, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				mu.Lock()
				raced[what]++
				mu.Unlock()
			}
		}
		return nil
	}
	cfg.Copy.AfterRead = func(ctx context.Context, schema, table string, rows [][][]byte) error {
		if len(rows) < 2 {
			return nil
		}
		first, last := string(rows[0][0]), string(rows[len(rows)-1][0])
		switch {
		case table == "orders" && orders.Add(1) <= 4:
			return exec(ctx, "orders",
				"UPDATE wl.orders SET amount = amount + 1000 WHERE id = "+first,
				"DELETE FROM wl.orders WHERE id = "+last, // its items are not copied yet
				"UPDATE wl.orders SET amount = -1 WHERE id = "+last+" + 1")
		case table == "items" && items.Add(1) <= 4:
			return exec(ctx, "items",
				"UPDATE wl.items SET qty = qty + 100 WHERE order_id = "+last,
				"DELETE FROM wl.items WHERE order_id = "+last+" AND line = 2",
				"DELETE FROM wl.orders WHERE id = "+first) // a parent of copied children
		}
		return nil
	}
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("changes made mid-chunk: %v", raced)
	if raced["orders"] < 8 || raced["items"] < 8 {
		t.Errorf("the race was not forced often enough: %v", raced)
	}
	e.verifyEqual(t)
}

// TestCopyMillion copies about a million rows (the orders/items chain with
// cascading foreign keys, unique keys, a table without a key, and a table
// of every column type) while the workload writes with DDL, then replicates
// the rest and verifies.
func TestCopyMillion(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const scale = 10
	e.seedCopy(t, ctx, 3000*scale)
	src := e.src.OpenT(t, "")
	if err := workload.SeedBulk(ctx, src, 30000*scale); err != nil {
		t.Fatal(err)
	}
	e.src.ExecT(t, `CREATE TABLE wl.types (
		id INT UNSIGNED PRIMARY KEY, u CHAR(36) CHARACTER SET ascii UNIQUE,
		i8 TINYINT, i16 SMALLINT UNSIGNED, i24 MEDIUMINT, i64 BIGINT UNSIGNED, dec1 DECIMAL(65,30), dec2 DECIMAL(5,2) UNSIGNED,
		f FLOAT, d DOUBLE, bits BIT(64), dt DATETIME(6), ts TIMESTAMP(6) NULL, day DATE, tm TIME(6), yr YEAR,
		c CHAR(12) CHARACTER SET latin1, vc VARCHAR(300) COLLATE utf8mb4_bin, txt MEDIUMTEXT, bin BINARY(16), vb VARBINARY(64),
		blb LONGBLOB, e ENUM('', 'a', 'b'), s SET('x', 'y', 'z'), j JSON, ip INET6, uu UUID, pt POINT
	) ENGINE=InnoDB`,
		`INSERT INTO wl.types SELECT seq, UUID(), CAST(seq % 256 AS SIGNED) - 128, seq % 65536, CAST(seq % 1000 AS SIGNED) - 500, seq * 1000000007,
		seq / 7, seq % 1000 / 10, seq / 3, seq / 11, seq * 12345, '2020-01-01' + INTERVAL seq SECOND,
		IF(seq % 5 = 0, NULL, '2021-06-01' + INTERVAL seq MINUTE), '2000-01-01' + INTERVAL seq % 9000 DAY,
		SEC_TO_TIME(CAST(seq % 86400 AS SIGNED) - 40000), 1901 + seq % 255, CONCAT('é', seq % 100), CONCAT('Vc ', seq, ' ', CHAR(seq % 94 + 33)),
		REPEAT('text ', seq % 50), UNHEX(MD5(seq)), UNHEX(LPAD(HEX(seq), 8, '0')), IF(seq % 3 = 0, NULL, REPEAT(CHAR(seq % 256), seq % 300)),
		ELT(1 + seq % 3, '', 'a', 'b'), ELT(1 + seq % 4, '', 'x', 'x,z', 'y,z'), JSON_OBJECT('n', seq, 'a', JSON_ARRAY(seq, 'é', NULL)),
		CONCAT('2001:db8::', HEX(seq % 65536)), UUID(), POINT(seq / 3, -seq)
		FROM wl.seq_1_to_`+strconv.Itoa(7000*scale))
	var seeded int64
	for _, tb := range []string{"accounts", "orders", "items", "kv", "log", "audit", "types"} {
		var n int64
		src.QueryRowContext(ctx, "SELECT COUNT(*) FROM wl."+tb).Scan(&n)
		seeded += n
	}
	if seeded < 1000000 {
		t.Fatalf("seeded %d rows, want a million", seeded)
	}
	wlCtx, stopLoad := context.WithCancel(ctx)
	wlDone := make(chan struct{})
	go func() {
		defer close(wlDone)
		e.workload(t, wlCtx, workload.Config{Seed: 5, Sessions: 4, DDL: true, Ledger: true, Rate: 200})
	}()
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.ChunkTime = 300 * time.Millisecond
	t0 := time.Now()
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tables, err := position.LoadCopy(ctx, e.dst.OpenT(t, ""), "t")
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, c := range tables {
		rows += c.Rows
	}
	t.Logf("seeded %d rows; copied %d rows of %d tables in %s under load", seeded, rows, len(tables), time.Since(t0).Round(time.Millisecond))
	if rows < seeded*9/10 {
		t.Errorf("copied %d of %d rows", rows, seeded)
	}
	stopLoad()
	<-wlDone
	e.catchUpAndVerify(t, ctx)
}

// TestCopyStartStoppedAfterCreate: a copy stopped after it created the
// target's tables and before it recorded its start; the source then drops
// one of them, and creates it again once the next run has started. The
// next run drops the empty table the stopped one left (it no longer lists
// it), so the stream creates it as the source did; everything ends equal.
// (Before, the table stayed, and the stream stopped on "already exists".)
func TestCopyStartStoppedAfterCreate(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.keep (id INT PRIMARY KEY, v INT, UNIQUE KEY v (v))",
		"CREATE TABLE wl.gone (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO wl.keep SELECT seq, seq FROM wl.seq_1_to_500", "INSERT INTO wl.gone VALUES (1, 'one')")
	cfg := e.copyConfig(t)
	runCtx, stop := context.WithCancel(ctx)
	cfg.Copy.AfterCreate = stop
	if err := Run(runCtx, cfg); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped run: %v", err)
	}
	var n int
	if err := e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'wl' AND TABLE_NAME = 'gone'").
		Scan(&n); err != nil || n != 1 {
		t.Fatalf("the stopped run did not leave wl.gone behind: %d %v", n, err)
	}
	e.src.ExecT(t, "DROP TABLE wl.gone")

	cfg = e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.src.ExecT(t, "CREATE TABLE wl.gone (id INT PRIMARY KEY, w INT)", "INSERT INTO wl.gone VALUES (2, 2)")
	e.catchUpAndVerify(t, ctx)
	copied, err := position.LoadCopy(ctx, e.dst.OpenT(t, ""), cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copied {
		if c.State != position.CopyDone {
			t.Errorf("copy row %s.%s in state %q; want %q", c.Schema, c.Table, c.State, position.CopyDone)
		}
	}
}
