package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// memoryCeiling is what the README promises for replicate with default
// settings, whatever the backlog.
const memoryCeiling = 512 << 20

// TestMemoryBounded drains, with default settings, a backlog that exceeds
// every buffer binlane has: 1 GB of 500 KB transactions, a single 200 MB
// transaction and a 12 MiB value (both servers with max_allowed_packet
// 16M), and measures the process's peak resident memory (VmHWM in /proc).
// Transactions were once counted as 256 bytes each, so the byte bounds of
// the window and batches did nothing, and values were sent as hex, twice
// their size.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin := buildBinary(t)
	opts := []string{"max-allowed-packet=16M", "innodb-buffer-pool-size=256M"}
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, Extra: opts})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Extra: opts})
	srcDB := src.OpenT(t, "")
	src.ExecT(t, "CREATE DATABASE marker")
	start := sourcePos(t, srcDB)
	src.ExecT(t, "CREATE DATABASE mem", "CREATE TABLE mem.b (id INT PRIMARY KEY, pad LONGBLOB NOT NULL)")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	// 2,000 transactions of 500 KB: 1 GB.
	for i := 0; i < 2000; i += 100 {
		var q strings.Builder
		for j := i; j < i+100; j++ {
			fmt.Fprintf(&q, "INSERT INTO mem.b VALUES (%d, REPEAT(UNHEX(MD5(%d)), 31250));", j, j)
		}
		if err := src.Exec(ctx, q.String()); err != nil {
			t.Fatal(err)
		}
	}
	// One transaction of 200 MB (2,000 rows of 100 KB), and a 12 MiB value.
	src.ExecT(t, "INSERT INTO mem.b SELECT 10000 + seq, REPEAT(UNHEX(MD5(seq)), 6250) FROM mem.seq_1_to_2000",
		"INSERT INTO mem.b VALUES (-1, REPEAT(UNHEX(MD5('big')), 786432))")
	end := sourcePos(t, srcDB)
	t.Logf("backlog written in %s", time.Since(began).Round(time.Second))

	args := []string{"replicate", "--source", binlaneURL(t, src, "mem"), "--target", binlaneURL(t, dst, "mem"),
		"--databases", "mem", "--start-gtid", start, "--stop-at-gtid", end}
	if a := os.Getenv("BINLANE_MEMTEST_ARG"); a != "" {
		args = append(args, a) // e.g. --mem-profile=FILE, to find what holds memory
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), os.Getenv("BINLANE_MEMTEST_ENV"))
	defer func() {
		if os.Getenv("BINLANE_MEMTEST_ENV") != "" {
			os.WriteFile("/tmp/memtest.log", out.Bytes(), 0o644)
		}
	}()
	began = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var peak int64
	for done := false; !done; {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("replicate: %v\n%s", err, tail(out.String(), 3000))
			}
			done = true
		case <-time.After(100 * time.Millisecond):
			if hwm := peakRSS(cmd.Process.Pid); hwm > peak {
				peak = hwm
			}
		}
	}
	t.Logf("replicated 1.4 GB in %s; peak resident memory %.0f MiB", time.Since(began).Round(time.Second), float64(peak)/(1<<20))
	if peak == 0 {
		t.Fatal("no reading of the process's memory")
	}
	if peak > memoryCeiling {
		t.Errorf("peak resident memory %.0f MiB, over the %d MiB bound", float64(peak)/(1<<20), memoryCeiling>>20)
	}
	sum := func(s *sandbox.Server) string {
		var n, crc string
		s.OpenT(t, "").QueryRow("SELECT COUNT(*), SUM(CRC32(pad)) FROM mem.b").Scan(&n, &crc)
		return n + "/" + crc
	}
	if a, b := sum(src), sum(dst); a != b {
		t.Errorf("source %s, target %s (rows/checksum)", a, b)
	}
}

// peakRSS reads a process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
