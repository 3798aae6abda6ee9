package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/verify"
	"github.com/binlane/binlane/internal/workload"
)

// buildBinary compiles binlane for tests that run it as a process.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "binlane")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// binlaneURL gives binlane's least-privilege account on s the documented
// grants on dbs and returns its address: binlane never runs as root in a
// test.
func binlaneURL(t *testing.T, s *sandbox.Server, dbs ...string) string {
	t.Helper()
	url, err := s.GrantBinlane(context.Background(), false, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// binlaneTargetURL is binlaneURL with the optional target grants: SET USER
// lets a copy create the source's views, routines and events with their
// DEFINER (README: privileges).
func binlaneTargetURL(t *testing.T, s *sandbox.Server, dbs ...string) string {
	t.Helper()
	url, err := s.GrantBinlane(context.Background(), true, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func sourcePos(t *testing.T, db *sql.DB) string {
	var pos string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

// TestCrashAndResume kills `binlane replicate` with SIGKILL at random
// moments, at least 20 times, while a conflict-heavy workload runs on the
// source with DDL, triggers, savepoints over a non-transactional table,
// unique-key swaps and a big transaction, and restarts it each time from
// the position saved in the target, with 8 workers. In the middle the
// source runs a DDL statement the target cannot apply (its table is missing
// there): binlane must stop on it, and once the test repairs the target,
// apply it. At the end the target must equal the source row by row.
//
// Double application is detected directly: wl.ledger has no key, and a
// row of it counts a source transaction; a transaction applied twice leaves
// a duplicate row that verify (a multiset comparison for such tables)
// reports. The kills are counted where they matter: after the stream's
// position had advanced in that run, and while binlane had a transaction
// open on the target.
func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	got := crashAndResume(t, crashPlan{workloadSeed: 99, killSeed: 1, workers: 8, kills: 20, duration: 25 * time.Second,
		bigTxnRows: 40000})
	if got.advanced < 10 || got.midTxn < 3 {
		t.Errorf("the kills did not land where they matter: %d after progress, %d mid-transaction", got.advanced, got.midTxn)
	}
}

// crashPlan shapes one crash-and-resume run: the workload's seed and
// length, the seed of the kill times, binlane's workers, and the least
// number of kills.
type crashPlan struct {
	workloadSeed int64
	killSeed     uint64
	workers      int
	kills        int
	duration     time.Duration
	bigTxnRows   int
}

// crashCounts says where the kills landed.
type crashCounts struct {
	kills, advanced, midTxn, stoppedOnDDL int
}

// crashAndResume runs the scenario of TestCrashAndResume and checks that
// the target ends equal to the source, with the trigger DDL deferred.
func crashAndResume(t *testing.T, plan crashPlan) crashCounts {
	t.Helper()
	bin := buildBinary(t)
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE marker")
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	srcDB.SetMaxOpenConns(8)
	start := sourcePos(t, srcDB)
	// Tables that differ on purpose, created on each side without binlog:
	// non-transactional on the source only, and one the target lacks.
	src.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE DATABASE wl", workload.NonTransactionalDDL("MyISAM"),
		"CREATE TABLE wl.skew (id INT PRIMARY KEY)")
	dst.ExecT(t, "CREATE DATABASE wl", workload.NonTransactionalDDL("InnoDB"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := workload.Setup(ctx, srcDB); err != nil {
		t.Fatal(err)
	}
	src.ExecT(t, workload.TriggerDDL...)
	wlErr := make(chan error, 1)
	go func() {
		_, err := workload.Run(ctx, srcDB, workload.Config{Seed: plan.workloadSeed, Sessions: 4, Duration: plan.duration, DDL: true,
			BigTxnRows: plan.bigTxnRows, Ledger: true, Savepoints: true})
		wlErr <- err
	}()
	go func() {
		time.Sleep(plan.duration / 3)
		src.Exec(ctx, "ALTER TABLE wl.skew ADD COLUMN x INT")
	}()

	rng := rand.New(rand.NewPCG(plan.killSeed, 2))
	var logs bytes.Buffer
	args := []string{"replicate", "--source", binlaneURL(t, src, "wl"), "--target", binlaneURL(t, dst, "wl"), "--stream", "crash",
		"--workers", fmt.Sprint(plan.workers), "--heartbeat", "500ms", "--max-txn-bytes", "1048576", "--databases", "wl"}
	var n crashCounts
	repaired := false
	prev := start
	for run, deadline := 0, time.Now().Add(plan.duration); n.kills < plan.kills || time.Now().Before(deadline); run++ {
		runArgs := args
		if run == 0 {
			runArgs = slices.Concat(args, []string{"--start-gtid", start})
		}
		cmd := exec.CommandContext(ctx, bin, runArgs...)
		fmt.Fprintf(&logs, "=== run %d\n", run)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
			// It stopped by itself: only the DDL the target cannot apply may
			// do that; repair the target and go on.
			st := streamRow(t, dstDB)
			if st.state != "error" || !strings.Contains(st.message, "wl.skew") {
				t.Fatalf("run %d stopped by itself: state %q: %s\n%s", run, st.state, st.message, tail(logs.String(), 3000))
			}
			n.stoppedOnDDL++
			if !repaired {
				dst.ExecT(t, "CREATE TABLE wl.skew (id INT PRIMARY KEY)")
				repaired = true
			}
			continue
		case <-time.After(time.Duration(200+rng.IntN(1300)) * time.Millisecond):
		}
		if openTransactions(t, dstDB) > 0 {
			n.midTxn++
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		n.kills++
		pos := streamRow(t, dstDB).pos
		if pos != "" && pos != prev {
			n.advanced++
		}
		prev = pos
	}
	if err := <-wlErr; err != nil {
		t.Fatalf("workload: %v", err)
	}
	t.Logf("killed binlane %d times: %d after the position advanced in that run, %d with a transaction open on the target; stopped on the broken DDL %d times",
		n.kills, n.advanced, n.midTxn, n.stoppedOnDDL)
	os.WriteFile(filepath.Join(os.TempDir(), "binlane-crash-test.log"), logs.Bytes(), 0o644)
	if !repaired {
		dst.ExecT(t, "CREATE TABLE IF NOT EXISTS wl.skew (id INT PRIMARY KEY)")
	}
	final := slices.Concat(args, []string{"--stop-at-gtid", sourcePos(t, srcDB)})
	cmd := exec.CommandContext(ctx, bin, final...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("final run: %v\n%s", err, tail(out.String(), 3000))
	}
	verifyEqual(t, srcDB, dstDB, "wl")
	var triggers, deferred int
	dstDB.QueryRow("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'wl'").Scan(&triggers)
	dstDB.QueryRow("SELECT COUNT(*) FROM binlane.deferred WHERE stream = 'crash'").Scan(&deferred)
	if triggers != 0 || deferred != len(workload.TriggerDDL) {
		t.Errorf("triggers on the target: %d (want 0); deferred trigger DDL: %d (want %d)", triggers, deferred, len(workload.TriggerDDL))
	}
	return n
}

// openTransactions counts binlane's transactions open on the target that
// changed rows.
func openTransactions(t *testing.T, db *sql.DB) int {
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM information_schema.INNODB_TRX x JOIN information_schema.PROCESSLIST p
		ON p.ID = x.trx_mysql_thread_id WHERE p.USER = ? AND x.trx_rows_modified > 0`, sandbox.TargetUser).Scan(&n)
	return n
}

type streamInfo struct{ pos, state, message string }

func streamRow(t *testing.T, db *sql.DB) streamInfo {
	var st streamInfo
	db.QueryRow("SELECT gtid_pos, state, message FROM binlane.streams WHERE name = 'crash'").Scan(&st.pos, &st.state, &st.message)
	return st
}

func verifyEqual(t *testing.T, src, dst *sql.DB, schema string) {
	t.Helper()
	src.SetMaxOpenConns(8)
	dst.SetMaxOpenConns(8)
	rules, _ := filter.New([]string{schema}, nil, nil)
	rep, err := verify.Run(context.Background(), verify.Config{Source: src, Target: dst, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal() {
		var b strings.Builder
		rep.Format(&b)
		t.Fatalf("source and target differ:\n%s", b.String())
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
