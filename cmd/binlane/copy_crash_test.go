package main

import (
	"bytes"
	"context"
	"database/sql"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/workload"
)

// TestCopyCrashAndResume kills `binlane copy` with SIGKILL at random
// moments, 10 times, while it copies an empty target from a source
// under a write load with conflicts and DDL, and once more while it builds
// the indexes it deferred on wl.audit (its ALTER TABLE seen running on the
// target); each run resumes from the checkpoints the last one committed.
// The last run ends by itself (copied and caught up), replicate takes the
// stream to the source's final position, and the target must equal the
// source row by row (wl.ledger, without a key, shows any row applied
// twice), every table's definition too (SHOW CREATE TABLE).
func TestCopyCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin := buildBinary(t)
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	srcDB.SetMaxOpenConns(8)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := workload.Setup(ctx, srcDB); err != nil {
		t.Fatal(err)
	}
	src.ExecT(t,
		"INSERT INTO wl.audit (order_id, what) SELECT seq, CHAR(65 + seq % 26) FROM wl.seq_1_to_400000",
		"INSERT INTO wl.log SELECT seq, CONCAT('l', seq), seq / 7 FROM wl.seq_1_to_5000",
		"INSERT INTO wl.kv (k, v, f, b, ch) SELECT CONCAT('Key', seq), JSON_OBJECT('n', seq), seq / 3, seq % 4096, 'é' FROM wl.seq_1_to_3000",
		// Indexes the copy defers and builds once the table's rows are in.
		"ALTER TABLE wl.audit ADD KEY by_order (order_id, n), ADD KEY by_what (what, order_id), ADD UNIQUE KEY what_n (what, n)")
	// The write load, with DDL (columns come and go, side tables are
	// created and dropped), runs until the last kill, at a rate the stream
	// keeps up with: chunks wait for the stream to reach their snapshots,
	// so a stream that lags the source stalls the copy (README).
	wlErr := make(chan error, 1)
	wlCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	go func() {
		_, err := workload.Run(wlCtx, srcDB, workload.Config{Seed: 5, Sessions: 2, Duration: 2 * time.Minute, Ledger: true, DDL: true, Rate: 200})
		wlErr <- err
	}()
	srcURL, dstURL := binlaneURL(t, src, "wl"), binlaneURL(t, dst, "wl")
	args := []string{"copy", "--source", srcURL, "--target", dstURL, "--stream", "copy", "--databases", "wl",
		"--workers", "4", "--copy-workers", "3", "--chunk-time", "20ms", "--heartbeat", "500ms"}
	rng := rand.New(rand.NewPCG(3, 4))
	var logs bytes.Buffer
	kills, advanced, buildKills := 0, 0, 0
	for done := false; !done; {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Kill it once this run committed a chunk (and a little later), so
		// that the kills land in the copy, not in the catch-up after a start.
		before, killAt := copiedRows(dstDB), time.Now().Add(20*time.Second)
		if kills >= 10 && buildKills > 0 {
			killAt = time.Now().Add(5 * time.Minute) // let it finish
		}
	watch:
		for {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("binlane copy: %v\n%s", err, tail(logs.String(), 4000))
				}
				done = true
				break watch
			case <-time.After(50 * time.Millisecond):
			}
			switch {
			case buildKills == 0 && building(dstDB):
				buildKills++
			case kills < 10 && copiedRows(dstDB) > before:
				// A short while: a run that goes on copying for long finishes
				// the copy in fewer runs than the test kills.
				time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
				advanced++
			case time.Now().Before(killAt):
				continue
			}
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			if kills++; kills == 10 {
				stopLoad()
			}
			break
		}
	}
	t.Logf("killed binlane copy %d times, %d of them after its checkpoints advanced, %d while it built indexes", kills, advanced, buildKills)
	if buildKills == 0 {
		t.Errorf("no kill landed while the deferred indexes were built")
	}
	if advanced < 8 {
		t.Errorf("the kills did not land mid-copy: checkpoints advanced before only %d of %d\n%s", advanced, kills, tail(logs.String(), 6000))
	}
	var unfinished int
	dstDB.QueryRow("SELECT COUNT(*) FROM binlane.copy WHERE stream = 'copy' AND state <> 'done'").Scan(&unfinished)
	if unfinished != 0 {
		t.Errorf("%d tables not done after binlane copy exited 0", unfinished)
	}
	if err := <-wlErr; err != nil {
		t.Fatalf("workload: %v", err)
	}
	final := []string{"replicate", "--source", srcURL, "--target", dstURL, "--stream", "copy", "--databases", "wl",
		"--workers", "4", "--heartbeat", "500ms", "--stop-at-gtid", sourcePos(t, srcDB)}
	out, err := exec.CommandContext(ctx, bin, final...).CombinedOutput()
	if err != nil {
		t.Fatalf("final replicate: %v\n%s", err, tail(string(out), 3000))
	}
	verifyEqual(t, srcDB, dstDB, "wl")
	for _, table := range []string{"audit", "accounts", "orders", "items", "kv"} {
		var n, a, b string
		srcDB.QueryRow("SHOW CREATE TABLE wl."+table).Scan(&n, &a)
		dstDB.QueryRow("SHOW CREATE TABLE wl."+table).Scan(&n, &b)
		if stripCounter(a) != stripCounter(b) {
			t.Errorf("wl.%s: the target's definition is not the source's:\n%s\n%s", table, a, b)
		}
	}
}

// building reports whether the target runs the ALTER TABLE that builds
// wl.audit's deferred indexes.
func building(db *sql.DB) bool {
	var n int
	db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'ALTER TABLE `wl`.`audit` ADD %'").Scan(&n)
	return n > 0
}

func stripCounter(create string) string {
	return regexp.MustCompile(` AUTO_INCREMENT=[0-9]+`).ReplaceAllString(create, "")
}

func copiedRows(db *sql.DB) int64 {
	var n sql.NullInt64
	db.QueryRow("SELECT SUM(rows_copied) FROM binlane.copy WHERE stream = 'copy'").Scan(&n)
	return n.Int64
}
