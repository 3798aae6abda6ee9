package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/workload"
)

// sameDefinitions fails the test unless every wl table has the same SHOW
// CREATE TABLE on both sides (AUTO_INCREMENT counters aside): the copy's
// deferred indexes end as the source has them, in the same order.
func (e *env) sameDefinitions(t *testing.T) {
	t.Helper()
	src, dst := e.src.OpenT(t, "wl"), e.dst.OpenT(t, "wl")
	rows, err := src.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'wl' AND TABLE_TYPE = 'BASE TABLE'")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		s, d := showCreate(t, src, n), showCreate(t, dst, n)
		if s != d {
			t.Errorf("wl.%s differs:\nsource %s\ntarget %s", n, s, d)
		}
	}
}

func showCreate(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var name, create string
	if err := db.QueryRow("SHOW CREATE TABLE wl.`"+table+"`").Scan(&name, &create); err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(create) {
		if strings.HasPrefix(f, "AUTO_INCREMENT=") {
			create = strings.Replace(create, " "+f, "", 1)
		}
	}
	return create
}

// catchUpAndCompare replicates from where a copy stopped to the source's
// position, then compares rows and definitions.
func (e *env) catchUpAndCompare(t *testing.T, ctx context.Context) {
	t.Helper()
	e.catchUpAndVerify(t, ctx)
	e.sameDefinitions(t)
}

// seedIndexed creates the workload's tables and wl.idx: a primary key, a
// unique key and plain keys that the copy defers, and rows.
func (e *env) seedIndexed(t *testing.T, ctx context.Context, rows int) {
	t.Helper()
	if err := workload.Setup(ctx, e.src.OpenT(t, "")); err != nil {
		t.Fatal(err)
	}
	e.seedIdx(t, rows)
}

// seedIdx creates wl.idx alone.
func (e *env) seedIdx(t *testing.T, rows int) {
	t.Helper()
	e.src.ExecT(t, "CREATE DATABASE IF NOT EXISTS wl", `CREATE TABLE wl.idx (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(20) NOT NULL, c INT NULL,
			KEY ka (a), UNIQUE KEY ub (b), KEY kc (c, a) COMMENT 'kc')`,
		"INSERT INTO wl.idx SELECT seq, seq % 97, CONCAT('b', seq), IF(seq % 5 = 0, NULL, seq % 13) FROM wl.seq_1_to_"+strconv.Itoa(rows))
}

// TestCopyDeferredIndexes: the copy creates tables without their
// secondary indexes and builds them once a table's rows are in. While
// wl.idx is copied (its indexes deferred: checked on the target), the
// source swaps unique values between rows of different chunks and runs DDL
// on the deferred indexes (drops one, renames one, adds two); while
// wl.idx2 is copied, it creates a table with a foreign key to wl.idx2's
// deferred unique key. Nothing is lost: the target ends equal row by row,
// and every table's SHOW CREATE TABLE equals the source's, index order
// included.
func TestCopyDeferredIndexes(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.seedIndexed(t, ctx, 20000)
	e.src.ExecT(t, "CREATE TABLE wl.idx2 LIKE wl.idx", "INSERT INTO wl.idx2 SELECT * FROM wl.idx")
	e.src.ExecT(t, "INSERT INTO wl.accounts (id, email, handle) SELECT 100000 + seq, CONCAT('e', seq, '@copy'), CONCAT('hc', seq) FROM wl.seq_1_to_3000")
	src, dst := e.src.OpenT(t, ""), e.dst.OpenT(t, "")
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	var chunks atomic.Int32
	var deferredSeen, ddlDone atomic.Bool
	var idx2Chunks atomic.Int32
	cfg.Copy.AfterRead = func(ctx context.Context, schema, table string, rows [][][]byte) error {
		if table == "idx2" && idx2Chunks.Add(1) == 2 {
			// A statement on another table that needs an index the copy
			// deferred (a foreign key's parent index).
			for _, q := range []string{
				"CREATE TABLE wl.idx_child (id INT PRIMARY KEY, b VARCHAR(20) NOT NULL, CONSTRAINT by_b FOREIGN KEY (b) REFERENCES wl.idx2 (b))",
				"INSERT INTO wl.idx_child VALUES (1, 'b77')",
			} {
				if _, err := src.ExecContext(ctx, q); err != nil {
					return err
				}
			}
		}
		if table != "idx" || len(rows) < 2 {
			return nil
		}
		switch chunks.Add(1) {
		case 2:
			// The target's table has no secondary index yet.
			var name, create string
			if err := dst.QueryRowContext(ctx, "SHOW CREATE TABLE wl.idx").Scan(&name, &create); err != nil {
				return err
			}
			deferredSeen.Store(!strings.Contains(create, "KEY `ka`") && !strings.Contains(create, "UNIQUE KEY `ub`"))
			// A unique value moves from a row of this chunk to a row of a
			// later one, and back: on the source the key holds at every
			// step.
			first, _ := strconv.Atoi(string(rows[0][0]))
			far := first + 15000
			for _, q := range []string{
				fmt.Sprintf("UPDATE wl.idx SET b = 'moving' WHERE id = %d", first),
				fmt.Sprintf("UPDATE wl.idx SET b = 'b%d' WHERE id = %d", first, far),
				fmt.Sprintf("UPDATE wl.idx SET b = 'b%d' WHERE id = %d", far, first),
				fmt.Sprintf("UPDATE wl.accounts SET email = CONCAT('x', email) WHERE id BETWEEN 100001 AND %d", 100010),
			} {
				if _, err := src.ExecContext(ctx, q); err != nil {
					return err
				}
			}
		case 3:
			// DDL on the deferred indexes while the table is copied.
			for _, q := range []string{
				"ALTER TABLE wl.idx DROP INDEX ka",
				"ALTER TABLE wl.idx RENAME INDEX kc TO kc_renamed",
				"CREATE INDEX ka2 ON wl.idx (a, c)",
				"ALTER TABLE wl.idx ADD UNIQUE KEY uba (b, a), ADD COLUMN d INT NULL",
				"UPDATE wl.idx SET d = id % 3 WHERE id % 100 = 0",
			} {
				if _, err := src.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			ddlDone.Store(true)
		}
		return nil
	}
	cfg.Copy.ChunkTime = 10 * time.Millisecond
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if !deferredSeen.Load() || !ddlDone.Load() || idx2Chunks.Load() < 2 {
		t.Fatalf("the copy did not defer wl.idx's indexes (%v), or the DDL did not run mid-copy (%v); chunks %d",
			deferredSeen.Load(), ddlDone.Load(), chunks.Load())
	}
	e.catchUpAndCompare(t, ctx)
	var state string
	dst.QueryRow("SELECT GROUP_CONCAT(DISTINCT state) FROM binlane.copy").Scan(&state)
	if state != "done" {
		t.Errorf("copy states %q after the copy", state)
	}
}

// TestCopyBuildFindsDivergence: a value the target holds twice under a
// deferred unique key (planted on the target while the copy runs: the
// target then is not the source) stops the stream when the key is built,
// with an error that names the key and the value; the table is not done.
func TestCopyBuildFindsDivergence(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.seedIndexed(t, ctx, 5000)
	dst := e.dst.OpenT(t, "")
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.ChunkTime = 5 * time.Millisecond
	cfg.FirstTries = 1
	var planted atomic.Bool
	cfg.Copy.AfterRead = func(ctx context.Context, schema, table string, rows [][][]byte) error {
		if table != "idx" || planted.Load() || string(rows[0][0]) == "1" {
			return nil
		}
		// Wait for the first chunk on the target, then break the key there.
		for i := 0; i < 100; i++ {
			res, err := dst.ExecContext(ctx, "UPDATE wl.idx SET b = 'b2' WHERE id = 1")
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				planted.Store(true)
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}
	err := Run(ctx, cfg)
	if !planted.Load() {
		t.Fatalf("the duplicate was not planted (err %v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "Duplicate entry 'b2' for key 'ub'") || !strings.Contains(err.Error(), "`wl`.`idx`") {
		t.Fatalf("want the stream stopped naming the table, key and value; got %v", err)
	}
	var state string
	dst.QueryRow("SELECT state FROM binlane.copy WHERE table_name = 'idx'").Scan(&state)
	if state == "done" {
		t.Errorf("wl.idx counts as copied after its unique key could not be built")
	}
}

// TestCopyParallelChunks copies one large table in small chunks with four
// readers while the source updates its rows, moves rows between ranges
// (their keys change) and deletes some: chunks of the table are written
// at once (counted), and the target ends equal row by row.
func TestCopyParallelChunks(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.seedIndexed(t, ctx, 60000)
	stopLoad := e.sourceLoad(t, ctx, 7, func(rng *rand.Rand, _ int) string {
		id := 1 + rng.IntN(60000)
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprintf("UPDATE wl.idx SET c = c + 1, a = a + 1 WHERE id = %d", id)
		case 1: // to a range far away (its row leaves one chunk for another)
			return fmt.Sprintf("UPDATE IGNORE wl.idx SET id = id + 100000 WHERE id = %d", id)
		case 2:
			return fmt.Sprintf("DELETE FROM wl.idx WHERE id = %d", id)
		}
		return fmt.Sprintf("INSERT IGNORE INTO wl.idx VALUES (%d, 1, 'n%d', NULL)", 200000+id, id)
	})
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.Workers = 4
	cfg.Copy.ChunkTime = 5 * time.Millisecond
	obs := &Observer{}
	cfg.Observer = obs
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	beside := obs.applier.Stats().ChunksBeside.Load()
	if err := stopLoad(); err != nil {
		t.Fatal(err)
	}
	t.Logf("chunks started beside another chunk of their table: %d", beside)
	if beside == 0 {
		t.Errorf("no two chunks of one table were written at once")
	}
	e.catchUpAndCompare(t, ctx)
}

// TestCopyRoundTrips counts what a chunk costs the source: one round trip,
// placed by GTID state (a quiet source's binlog stands still) or by binlog
// coordinate (as chunks are where it moves) alike; the table's first chunk
// too, whose columns the copy's listing read.
func TestCopyRoundTrips(t *testing.T) {
	for _, byCoord := range []bool{false, true} {
		t.Run(fmt.Sprintf("by-coordinate=%v", byCoord), func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			e.seedIdx(t, 30000)
			cfg := e.copyConfig(t)
			cfg.Copy.ExitWhenDone = true
			cfg.Copy.ByCoordinate = byCoord
			cfg.Copy.ChunkTime = time.Millisecond // the smallest chunks: many of them
			obs := &Observer{}
			cfg.Observer = obs
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			st := obs.copier.Stats()
			chunks, trips, still, stillTrips := st.Chunks.Load(), st.RoundTrips.Load(), st.StillChunks.Load(), st.StillTrips.Load()
			t.Logf("%d chunks, %d round trips; binlog still: %d chunks, %d round trips", chunks, trips, still, stillTrips)
			if chunks < 20 {
				t.Fatalf("only %d chunks", chunks)
			}
			wantStill := chunks
			if byCoord {
				wantStill = 0
			}
			if trips != chunks || still != wantStill || stillTrips != wantStill || st.Behind.Load() != 0 {
				t.Errorf("%d round trips for %d chunks (%d of them where the binlog stood still, %d round trips; %d snapshots behind), want %d (%d)",
					trips, chunks, still, stillTrips, st.Behind.Load(), chunks, wantStill)
			}
			e.verifyEqual(t)
		})
	}
}

// TestCopyKeysOfEveryKind copies tables chunked along keys of each kind
// binlane orders itself (a DATETIME(3), a utf8mb4_bin string with trailing
// spaces, an integer with a binary string) in small chunks while their
// rows change: the chunk bounds (read as text) and the keys of the
// changes (from the binlog) must order alike, or changes would be applied
// or skipped on the wrong side of a chunk.
func TestCopyKeysOfEveryKind(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE wl",
		"CREATE TABLE wl.bydate (d DATETIME(3) PRIMARY KEY, v INT NOT NULL, KEY v (v))",
		"INSERT INTO wl.bydate SELECT TIMESTAMP'2024-01-01 00:00:00' + INTERVAL (seq * 1500123) MICROSECOND, seq FROM wl.seq_1_to_8000",
		"CREATE TABLE wl.bystr (s VARCHAR(20) COLLATE utf8mb4_bin PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO wl.bystr SELECT CONCAT('k', LPAD(seq, 5, '0'), IF(seq % 3 = 0, ' ', ''), IF(seq % 7 = 0, 'é', '')), seq FROM wl.seq_1_to_8000",
		"CREATE TABLE wl.bypair (a INT NOT NULL, b VARBINARY(8) NOT NULL, v INT NOT NULL, PRIMARY KEY (a, b))",
		"INSERT INTO wl.bypair SELECT seq % 50, UNHEX(LPAD(HEX(seq), 6, '0')), seq FROM wl.seq_1_to_8000")
	stopLoad := e.sourceLoad(t, ctx, 9, func(rng *rand.Rand, _ int) string {
		n := 1 + rng.IntN(8000)
		qs := []string{
			fmt.Sprintf("UPDATE wl.bydate SET v = v + 1 WHERE v = %d", n),
			fmt.Sprintf("UPDATE IGNORE wl.bydate SET d = d + INTERVAL 1 HOUR WHERE v = %d", n),
			fmt.Sprintf("UPDATE wl.bystr SET v = v + 1 WHERE v = %d", n),
			fmt.Sprintf("DELETE FROM wl.bystr WHERE v = %d", n),
			fmt.Sprintf("UPDATE wl.bypair SET v = v + 1 WHERE v = %d", n),
			fmt.Sprintf("UPDATE IGNORE wl.bypair SET a = a + 1 WHERE v = %d", n),
		}
		return qs[rng.IntN(len(qs))]
	})
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.ChunkTime = time.Millisecond
	obs := &Observer{}
	cfg.Observer = obs
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	chunks := obs.copier.Stats().Chunks.Load()
	if err := stopLoad(); err != nil {
		t.Fatal(err)
	}
	for _, p := range obs.Copy() {
		if p.OnePass != "" {
			t.Errorf("%s copied in one pass: %s", p.Table, p.OnePass)
		}
	}
	if chunks < 30 {
		t.Errorf("only %d chunks", chunks)
	}
	e.catchUpAndCompare(t, ctx)
}

// TestCopyLongUniqueKey copies a table with a long unique key (UNIQUE over
// TEXT: MariaDB keeps it with a hidden hash column the binlog lists) while
// its rows change: the key is deferred and built after the load like any
// other, and the changes replicated meanwhile apply with and without it.
func TestCopyLongUniqueKey(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE wl",
		"CREATE TABLE wl.lu (id INT PRIMARY KEY, body TEXT, v INT NOT NULL, UNIQUE KEY body (body))",
		"INSERT INTO wl.lu SELECT seq, CONCAT('body ', seq), seq FROM wl.seq_1_to_6000")
	stopLoad := e.sourceLoad(t, ctx, 11, func(rng *rand.Rand, i int) string {
		n := 1 + rng.IntN(6000)
		qs := []string{
			fmt.Sprintf("UPDATE wl.lu SET v = v + 1 WHERE id BETWEEN %d AND %d", n, n+3),
			fmt.Sprintf("UPDATE IGNORE wl.lu SET body = CONCAT('moved ', id, ' ', %d) WHERE id = %d", i, n),
			fmt.Sprintf("INSERT IGNORE INTO wl.lu VALUES (%d, CONCAT('new ', %[1]d), 0)", 10000+i),
		}
		return qs[rng.IntN(len(qs))]
	})
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.ChunkTime = time.Millisecond
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := stopLoad(); err != nil {
		t.Fatal(err)
	}
	e.catchUpAndCompare(t, ctx)
}

// sourceLoad runs the statements next returns on the source, one every
// millisecond or so, until the returned stop is called; stop waits for the
// statement running then to end and reports the first failed statement.
// (A statement cancelled through its context would only lose its client:
// the server finishes it and binlogs it after stop returned, past the
// position the test then replicates to.)
func (e *env) sourceLoad(t *testing.T, ctx context.Context, seed uint64, next func(rng *rand.Rand, i int) string) (stop func() error) {
	src := e.src.OpenT(t, "")
	loadCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(seed, seed+1))
		var err error
		for i := 0; loadCtx.Err() == nil && err == nil; i++ {
			_, err = src.ExecContext(ctx, next(rng, i))
			time.Sleep(time.Millisecond)
		}
		done <- err
	}()
	return func() error {
		cancel()
		return <-done
	}
}
