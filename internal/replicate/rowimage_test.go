package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/workload"
)

// TestPartialRowImages replicates the randomized workload (hot rows on a
// primary key only, unique-key swaps and NULLs, primary-key changes,
// cascading foreign keys two levels deep, BLOB and TEXT columns, a keyless
// table, DDL, a transaction streamed in parts) and the shop (orders and
// lines changed beside their customers and items) from a source that logs
// MINIMAL, and one that logs NOBLOB, row images, with 1 and with 8
// workers; each target ends equal to the source, row by row.
func TestPartialRowImages(t *testing.T) {
	for _, image := range []string{"MINIMAL", "NOBLOB"} {
		t.Run(image, func(t *testing.T) {
			e := newEnvWith(t, "binlog-row-image="+image)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			e.workload(t, ctx, workload.Config{Seed: 31, Sessions: 6, Transactions: 1500, DDL: true, BigTxnRows: 30000})
			e.src.ExecT(t, // every kind of change under the image, whatever the seed drew
				"UPDATE wl.hot SET counter = counter + 1",
				"UPDATE wl.accounts SET balance = balance + 1 WHERE id % 3 = 0",
				"UPDATE wl.accounts SET note = CONCAT('n', id) WHERE id % 5 = 0",
				"UPDATE wl.orders SET payload = REPEAT('p', 100) WHERE id % 4 = 0",
				"DELETE FROM wl.accounts WHERE id % 7 = 0")
			// The shop: child rows updated beside updates of their parents'
			// balances and stock, orders deleted with their lines.
			e.grant(t, workload.Schema, workload.Shop.Schema())
			shop := workload.Config{Mode: workload.Shop, Seed: 31, Sessions: 6, Transactions: 1500, SeedOrders: 500, Customers: 300, Items: 200}
			src := e.src.OpenT(t, "")
			if err := workload.Prepare(ctx, src, shop); err != nil {
				t.Fatal(err)
			}
			st, err := workload.Run(ctx, src, shop)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("shop: %d committed", st.Committed.Load())
			end := gtidPos(t, e.src)
			for _, workers := range []int{1, 8} {
				dst := e.dst
				if workers != 1 {
					dst = sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Name: "target8"})
				}
				dstURL, err := dst.GrantBinlane(ctx, false, workload.Schema, workload.Shop.Schema())
				if err != nil {
					t.Fatal(err)
				}
				cfg := e.config(t, workers)
				if cfg.Target, err = dsn.Parse(dstURL); err != nil {
					t.Fatal(err)
				}
				cfg.StopAtGTID = end
				cfg.MaxTxnBytes = 1 << 20 // the big transaction streams in parts
				if err := Run(ctx, cfg); err != nil {
					t.Fatalf("%d workers: %v", workers, err)
				}
				verifyServers(t, e.src, dst, workload.Schema, workload.Shop.Schema())
			}
		})
	}
}

// TestPartialRowImageStatements replays each kind of change from MINIMAL
// and NOBLOB sessions: updates of the columns written (an ON UPDATE clock
// included or left alone), primary-key changes, inserts that leave columns
// to their defaults (implicit ones of NOT NULL columns included), deletes
// by key, unique values handed from row to row, cascades, BLOB and TEXT
// columns not written. Then the refusals: a row the image cannot name on
// the target, and a row missing there.
func TestPartialRowImageStatements(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "pri")
	defs := []string{"CREATE DATABASE pri",
		`CREATE TABLE pri.p (id INT PRIMARY KEY, code VARCHAR(10) UNIQUE, n INT NOT NULL DEFAULT 7, body TEXT,
			ts TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), d INT DEFAULT (n + 1),
			g INT AS (n * 2) VIRTUAL)`,
		`CREATE TABLE pri.c (id INT PRIMARY KEY AUTO_INCREMENT, p_id INT, v INT NOT NULL DEFAULT 0, blob_v BLOB,
			FOREIGN KEY (p_id) REFERENCES pri.p (id) ON DELETE CASCADE ON UPDATE CASCADE)`,
		"CREATE TABLE pri.nn (x INT NOT NULL, y INT, UNIQUE KEY (x))",
		"CREATE TABLE pri.bad (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE pri.implicit (id INT PRIMARY KEY, n INT NOT NULL, s VARCHAR(5) NOT NULL, b BLOB NOT NULL)"}
	e.src.ExecT(t, defs...)
	e.dst.ExecT(t, defs...)
	start := gtidPos(t, e.src)
	for _, image := range []string{"MINIMAL", "NOBLOB"} {
		k := 100
		if image == "NOBLOB" {
			k = 200
		}
		ids := func(q string) string { return strings.ReplaceAll(q, "K", fmt.Sprint(k)) }
		e.src.ExecT(t, "SET SESSION binlog_row_image = "+image,
			ids("INSERT INTO pri.p (id, code) SELECT K + seq, CONCAT('c', K + seq) FROM pri.seq_1_to_20"),
			ids("INSERT INTO pri.p (id, body) VALUES (K + 50, REPEAT('b', 300))"),
			ids("INSERT INTO pri.c (p_id) SELECT K + 1 + seq % 20 FROM pri.seq_1_to_60"),
			ids("INSERT INTO pri.nn VALUES (K + 1, 1), (K + 2, 2)"),
			"SET TIMESTAMP = 1700000000.5",
			ids("UPDATE pri.p SET n = n + 1 WHERE id <= K + 10"),
			"SET TIMESTAMP = DEFAULT",
			ids("UPDATE pri.p SET body = 'text' WHERE id BETWEEN K + 5 AND K + 15"),
			ids("BEGIN"), ids("UPDATE pri.p SET code = NULL WHERE id = K + 1"), ids("UPDATE pri.p SET code = CONCAT('c', K + 1) WHERE id = K + 2"), "COMMIT",
			ids("UPDATE pri.p SET id = K + 90 WHERE id = K + 3"), // cascades into c
			ids("UPDATE pri.c SET v = v + 1 WHERE p_id = K + 90"),
			ids("UPDATE pri.c SET blob_v = 'blob' WHERE id % 3 = 0"),
			ids("UPDATE pri.c SET p_id = K + 4 WHERE p_id = K + 5"),
			ids("DELETE FROM pri.p WHERE id = K + 6"), // cascades into c
			ids("DELETE FROM pri.c WHERE id % 11 = 0"),
			ids("UPDATE pri.nn SET y = y + 10"),
			ids("DELETE FROM pri.nn WHERE x = K + 2"),
			ids("INSERT INTO pri.bad VALUES (K, 0)"),
			// Columns without a default, left out under a lax sql_mode:
			// the source stored their implicit defaults (0, '').
			"SET SESSION sql_mode = ''", ids("INSERT INTO pri.implicit (id) VALUES (K)"),
			ids("UPDATE pri.implicit SET n = 5 WHERE id = K"))
	}
	end := gtidPos(t, e.src)
	for _, workers := range []int{1, 8} {
		if workers == 8 {
			e.dst.ExecT(t, "DROP DATABASE pri")
			e.dst.ExecT(t, defs...)
		}
		if err, _ := e.runStream(t, "pri", start, end, func(c *Config) { c.Apply.Workers = workers }); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		verifyServers(t, e.src, e.dst, "pri")
	}

	// The target's table has no key to find a row by: the image of the
	// source's primary key cannot name it.
	e.dst.ExecT(t, "ALTER TABLE pri.bad DROP PRIMARY KEY")
	e.src.ExecT(t, "SET SESSION binlog_row_image = MINIMAL", "UPDATE pri.bad SET v = 1 WHERE id = 100")
	next := gtidPos(t, e.src)
	err, _ := e.runStream(t, "pri", end, next)
	if err == nil || !strings.Contains(err.Error(), "`pri`.`bad`") || !strings.Contains(err.Error(), "no primary key or NOT NULL unique key") ||
		!strings.Contains(err.Error(), next) {
		t.Fatalf("an update the image cannot name: %v", err)
	}
	t.Logf("refused as it should: %v", err)
	if st := e.state(t, "pri"); st.GTID != end {
		t.Errorf("position %s after the refusal, want %s", st.GTID, end)
	}
	e.dst.ExecT(t, "ALTER TABLE pri.bad ADD PRIMARY KEY (id)")
	if err, _ := e.runStream(t, "pri", "", next); err != nil {
		t.Fatal(err)
	}

	// A row missing on the target is an error, as for full images.
	e.dst.ExecT(t, "DELETE FROM pri.bad WHERE id = 100")
	e.src.ExecT(t, "SET SESSION binlog_row_image = MINIMAL", "UPDATE pri.bad SET v = 2 WHERE id = 100")
	after := gtidPos(t, e.src)
	err, _ = e.runStream(t, "pri", "", after)
	if err == nil || !strings.Contains(err.Error(), "`pri`.`bad`") {
		t.Fatalf("an update of a row missing on the target: %v", err)
	}
	if st := e.state(t, "pri"); st.GTID != next {
		t.Errorf("position %s after the failure, want %s", st.GTID, next)
	}
}

// TestCopyUnderMinimalImages: the copy into an empty target while the
// source takes the randomized load (DDL included) logging MINIMAL images;
// changes of rows in copied ranges apply from their partial images, those
// of rows not copied yet are left to their chunks; the target ends equal,
// row by row.
func TestCopyUnderMinimalImages(t *testing.T) {
	e := newEnvWith(t, "binlog-row-image=MINIMAL")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e.seedCopy(t, ctx, 30000)
	// Besides the workload, updates and deletes all over the chunked
	// table while it is copied.
	e.copyUnderLoad(t, ctx, workload.Config{Seed: 41, Sessions: 4, Duration: 8 * time.Second, DDL: true, Ledger: true}, func(ctx context.Context) {
		db := e.src.OpenT(t, "")
		for i := 0; ctx.Err() == nil; i++ {
			db.ExecContext(ctx, fmt.Sprintf("UPDATE wl.audit SET what = 'u' WHERE n %% 97 = %d", i%97))
			db.ExecContext(ctx, fmt.Sprintf("DELETE FROM wl.audit WHERE n = %d", 1+(i*7919)%30000))
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// TestCopyStopsAtPartialMove: during a copy, a MINIMAL update that moves a
// row from a range not copied yet into a copied one would have to insert
// the whole row, which its image does not hold: the stream stops before
// it, naming the table and the GTID, its position before the update.
func TestCopyStopsAtPartialMove(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "mv")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE mv", "CREATE TABLE mv.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO mv.t SELECT seq, seq FROM mv.seq_1_to_200000")
	cfg := e.copyConfig(t)
	cfg.Rules, cfg.Copy.ChunkTime, cfg.Copy.ExitWhenDone = mustRules(t, "mv"), 5*time.Millisecond, true
	dst := e.dst.OpenT(t, "")
	go func() { // move the last row to the front once the first chunk committed
		for ctx.Err() == nil {
			var n sql.NullInt64
			dst.QueryRow("SELECT SUM(rows_copied) FROM binlane.copy").Scan(&n)
			if n.Int64 > 0 {
				if err := e.src.Exec(ctx, "SET SESSION binlog_row_image = MINIMAL", "UPDATE mv.t SET id = -1 WHERE id = 200000"); err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	err := Run(ctx, cfg)
	if err == nil {
		t.Skip("the copy finished before the update: nothing to refuse")
	}
	moved := gtidPos(t, e.src)
	if !strings.Contains(err.Error(), "moves a row into a copied range") || !strings.Contains(err.Error(), "`mv`.`t`") ||
		!strings.Contains(err.Error(), moved) {
		t.Fatalf("got %v, want the refusal naming `mv`.`t` and %s", err, moved)
	}
	t.Logf("refused as it should: %v", err)
	st := e.state(t, "t")
	saved, err1 := gtid.Parse(st.GTID)
	refused, err2 := gtid.Parse(moved)
	if err1 != nil || err2 != nil || saved.Seq >= refused.Seq || st.State != position.StateError {
		t.Errorf("position %s state %s after the refusal of %s (%v %v)", st.GTID, st.State, moved, err1, err2)
	}
}
