package main

import (
	"bytes"
	"context"
	"database/sql"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestKillDuringLongDDL kills binlane while the target runs a long ALTER
// that binlane started (the server goes on with it: a killed client's
// statement is not interrupted), and once more with the target killed too
// (InnoDB's DDL is atomic: the ALTER is rolled back by recovery). Each
// restart must apply the ALTER exactly once: wait for the first one to end
// and see from the target's definition whether it applied, instead of
// running it a second time ("Duplicate column name") or skipping it when it
// did not apply.
func TestKillDuringLongDDL(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin := buildBinary(t)
	for _, killServer := range []bool{false, true} {
		name := "binlane killed"
		if killServer {
			name = "binlane and the target killed"
		}
		t.Run(name, func(t *testing.T) {
			src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
			dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
			ddl := []string{"CREATE DATABASE big", "CREATE TABLE big.t (id INT PRIMARY KEY, pad CHAR(200) NOT NULL)",
				"INSERT INTO big.t SELECT seq, REPEAT('x', 200) FROM big.seq_1_to_400000"}
			src.ExecT(t, append([]string{"SET SESSION sql_log_bin = 0"}, ddl...)...)
			dst.ExecT(t, ddl...)
			srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
			src.ExecT(t, "CREATE DATABASE marker") // a position to start from
			start := sourcePos(t, srcDB)
			// FORCE rebuilds the table: long enough to be killed in the middle.
			src.ExecT(t, "ALTER TABLE big.t ADD COLUMN c INT NOT NULL DEFAULT 7, FORCE", "INSERT INTO big.t (id, pad) VALUES (0, 'after')")
			end := sourcePos(t, srcDB)
			args := []string{"replicate", "--source", binlaneURL(t, src, "big"), "--target", binlaneURL(t, dst, "big"),
				"--stream", "ddl", "--databases", "big", "--heartbeat", "500ms"}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()

			cmd := exec.CommandContext(ctx, bin, slices.Concat(args, []string{"--start-gtid", start})...)
			var logs bytes.Buffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("first run:\n%s", tail(logs.String(), 3000))
				}
			}()
			waitFor(t, 60*time.Second, "the ALTER running on the target", func() bool {
				var n int
				dstDB.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'ALTER TABLE big.t%'").Scan(&n)
				return n > 0
			})
			time.Sleep(300 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if killServer {
				if err := dst.Kill(); err != nil {
					t.Fatal(err)
				}
				if err := dst.Start(ctx); err != nil {
					t.Fatal(err)
				}
				if hasColumn(t, dst.OpenT(t, ""), "c") {
					t.Fatal("the ALTER survived the target's crash: the test did not kill it in the middle")
				}
			} else if st := ddlRow(t, dstDB); st != "running" {
				t.Fatalf("statement mark %q after the kill; want running", st)
			}

			final := exec.CommandContext(ctx, bin, slices.Concat(args, []string{"--stop-at-gtid", end})...)
			var out bytes.Buffer
			final.Stdout, final.Stderr = &out, &out
			if err := final.Run(); err != nil {
				t.Fatalf("restart: %v\n%s", err, tail(out.String(), 3000))
			}
			t.Logf("restart:\n%s", tail(out.String(), 2000))
			dstDB = dst.OpenT(t, "")
			if !hasColumn(t, dstDB, "c") || strings.Contains(out.String(), "Duplicate column") {
				t.Fatalf("the ALTER was not applied exactly once:\n%s", out.String())
			}
			if !killServer && !strings.Contains(out.String(), "was applied before the previous run stopped") {
				t.Errorf("the restart did not recognize the ALTER the killed run had started")
			}
			verifyEqual(t, srcDB, dstDB, "big")
		})
	}
}

func hasColumn(t *testing.T, db *sql.DB, col string) bool {
	var n int
	db.QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'big' AND TABLE_NAME = 't' AND COLUMN_NAME = ?", col).Scan(&n)
	return n == 1
}

func ddlRow(t *testing.T, db *sql.DB) string {
	var st string
	db.QueryRow("SELECT ddl_state FROM binlane.streams WHERE name = 'ddl'").Scan(&st)
	return st
}
