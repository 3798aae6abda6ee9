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

func sourcePos(t *testing.T, db *sql.DB) string {
	var pos string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

// TestCrashAndResume kills `binlane replicate` with SIGKILL at random
// moments, at least 20 times, while a conflict-heavy workload runs, and
// restarts it each time from the position saved in the target. At the end
// the target must equal the source row by row, and no run may have met a
// duplicate key (which would mean a transaction applied twice).
func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin := buildBinary(t)
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE marker")
	srcDB := src.OpenT(t, "")
	srcDB.SetMaxOpenConns(8)
	start := sourcePos(t, srcDB)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := workload.Setup(ctx, srcDB); err != nil {
		t.Fatal(err)
	}
	wlErr := make(chan error, 1)
	go func() {
		_, err := workload.Run(ctx, srcDB, workload.Config{Seed: 99, Sessions: 4, Duration: 25 * time.Second, DDL: true, BigTxnRows: 40000})
		wlErr <- err
	}()

	rng := rand.New(rand.NewPCG(1, 2))
	var logs bytes.Buffer
	args := []string{"replicate", "--source", binlaneURL(t, src, "wl"), "--target", binlaneURL(t, dst, "wl"), "--stream", "crash",
		"--workers", "8", "--heartbeat", "500ms", "--max-txn-bytes", "1048576"}
	kills := 0
	for deadline := time.Now().Add(25 * time.Second); kills < 20 || time.Now().Before(deadline); kills++ {
		run := args
		if kills == 0 {
			run = append(run, "--start-gtid", start)
		}
		cmd := exec.CommandContext(ctx, bin, run...)
		fmt.Fprintf(&logs, "=== run %d\n", kills)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		var pos string
		dst.OpenT(t, "").QueryRow("SELECT gtid_pos FROM binlane.streams WHERE name='crash'").Scan(&pos)
		t.Logf("run %d killed at position %s", kills, pos)
	}
	if err := <-wlErr; err != nil {
		t.Fatalf("workload: %v", err)
	}
	t.Logf("killed binlane %d times", kills)

	os.WriteFile(filepath.Join(os.TempDir(), "binlane-crash-test.log"), logs.Bytes(), 0o644)
	final := append(args, "--stop-at-gtid", sourcePos(t, srcDB))
	cmd := exec.CommandContext(ctx, bin, final...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("final run: %v\n%s", err, tail(out.String(), 3000))
	}
	logs.Write(out.Bytes())
	if strings.Contains(logs.String(), "Duplicate entry") {
		t.Fatalf("a transaction was applied twice:\n%s", grepLines(logs.String(), "Duplicate entry"))
	}
	verifyEqual(t, srcDB, dst.OpenT(t, ""), "wl")
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
