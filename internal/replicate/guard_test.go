package replicate

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
)

// TestCopyChunkRowMismatchStops: a copied chunk that does not insert every
// row it carries (here a row put on the target behind binlane's back, which
// LOAD DATA LOCAL skips as a duplicate) stops the stream with the chunk and
// the counts named; it must never commit the chunk's checkpoint without its
// rows. (The failed guard used to be diagnosed as a transaction body, which
// for a chunk is empty: the checkpoint committed, the rows were lost.)
func TestCopyChunkRowMismatchStops(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO wl.t SELECT seq, CONCAT('v', seq) FROM wl.seq_1_to_5000")
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	dst := e.dst.OpenT(t, "")
	var planted atomic.Bool
	cfg.Copy.AfterRead = func(ctx context.Context, schema, table string, rows [][][]byte) error {
		if len(rows) < 2 || planted.Swap(true) {
			return nil
		}
		_, err := dst.ExecContext(ctx, "INSERT INTO wl.t VALUES ("+string(rows[1][0])+", 'planted')")
		return err
	}
	err := Run(ctx, cfg)
	if err == nil {
		t.Fatal("the copy finished over a chunk that did not insert all its rows")
	}
	for _, want := range []string{"copied rows of `wl`.`t`", "expected"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("stopped with: %v", err)
	var n int
	if err := dst.QueryRow("SELECT COUNT(*) FROM wl.t WHERE v <> 'planted'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var covered string
	dst.QueryRow("SELECT COALESCE(GROUP_CONCAT(coverage), '') FROM binlane.copy").Scan(&covered)
	t.Logf("%d copied rows committed; checkpoints %s", n, covered)
	// Whatever committed is whole: every committed chunk's rows are there.
	var missing int
	if err := dst.QueryRow("SELECT COUNT(*) FROM wl.t WHERE v = 'planted'").Scan(&missing); err != nil || missing != 1 {
		t.Errorf("the planted row: %d (%v)", missing, err)
	}
}

// TestStreamedTransactionGuardStops: a transaction too large to hold is
// written in parts; when a statement of its last round trip does not
// affect the rows it should (a row missing on the target), the stream
// stops before that transaction, naming it. (Diagnosis used to write the
// transaction's first part again and commit it as the whole.)
func TestStreamedTransactionGuardStops(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.big (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO wl.big SELECT seq, 'old' FROM wl.seq_1_to_10")
	cfg := e.config(t, 4)
	cfg.StopAtGTID = gtidPos(t, e.src)
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.dst.ExecT(t, "DELETE FROM wl.big WHERE id = 5")
	e.src.ExecT(t, "BEGIN", "INSERT INTO wl.big SELECT seq, CONCAT('new ', seq) FROM wl.seq_100_to_60000",
		"UPDATE wl.big SET v = 'changed' WHERE id = 5", "COMMIT")
	big := gtidPos(t, e.src)
	e.src.ExecT(t, "INSERT INTO wl.big VALUES (70000, 'after')")
	cfg = e.config(t, 4)
	cfg.StartGTID = "" // from the saved position
	cfg.MaxTxnBytes = 1 << 20
	cfg.StopAtGTID = gtidPos(t, e.src)
	cfg.RetryMax = 0
	runCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	err := Run(runCtx, cfg)
	if err == nil {
		t.Fatal("the stream applied a transaction whose UPDATE found no row")
	}
	t.Logf("stopped with: %v", err)
	st := streamState(t, e.dst.OpenT(t, ""))
	applied, perr := gtid.ParseSet(st.GTID)
	want, _ := gtid.ParseSet(big)
	if perr != nil || applied.ContainsSet(want) {
		t.Errorf("the stream's position %s covers the failed transaction %s", st.GTID, big)
	}
	var n int
	e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM wl.big").Scan(&n)
	if n != 9 {
		t.Errorf("the target holds %d rows of wl.big, want the 9 from before the failed transaction", n)
	}
}

// TestCopyReadCancelled: a run ended while a reader is about to read a
// chunk (the query then fails) ends as a stop does, and the next run
// finishes the copy equal. (A reader once closed a failed query's nil
// result on its way out: a nil-pointer panic that took the whole process
// down.)
func TestCopyReadCancelled(t *testing.T) {
	e := newEnv(t)
	e.src.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO wl.t SELECT seq, CONCAT('v', seq) FROM wl.seq_1_to_5000")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCtx, end := context.WithCancel(ctx)
	cfg := e.copyConfig(t)
	cfg.Copy.ExitWhenDone = true
	var ended atomic.Bool
	cfg.Copy.BeforeRead = func(context.Context, string, string) {
		ended.Store(true)
		end()
	}
	if err := Run(runCtx, cfg); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("a run ended mid-read returned %v, want a stop", err)
	}
	if !ended.Load() {
		t.Fatal("no chunk was about to be read")
	}
	cfg.Copy.BeforeRead = nil
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}
