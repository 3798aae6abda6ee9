package main

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestKillDuringStatementDML SIGKILLs `binlane replicate` again and again
// while it applies row changes a STATEMENT session logged as statements: a
// counter incremented by a statement (applied twice, it would be off) and
// rows computed from it and from RAND(), each pair in one transaction. Each
// restart resumes from the position saved with the statements' effects, and
// the target ends equal to the source row by row. The session also filled a
// temporary table; after the last kill binlane no longer has it, and the
// statement that copies it into a replicated table stops the stream before
// it, naming the table, with the position and the target as they were.
func TestKillDuringStatementDML(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin := buildBinary(t)
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	setup := []string{"CREATE DATABASE sdml", "CREATE TABLE sdml.c (id INT PRIMARY KEY, n INT)", "INSERT INTO sdml.c VALUES (1, 0)",
		"CREATE TABLE sdml.t (id INT PRIMARY KEY AUTO_INCREMENT, n INT, r DOUBLE)"}
	src.ExecT(t, append([]string{"SET SESSION sql_log_bin = 0"}, setup...)...)
	dst.ExecT(t, setup...)
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	src.ExecT(t, "CREATE DATABASE marker")
	start := sourcePos(t, srcDB)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	session, err := srcDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	run := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := session.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	run("SET SESSION binlog_format = STATEMENT")
	for i := 0; i < 800; i++ {
		run("BEGIN", "UPDATE sdml.c SET n = n + 1 WHERE id = 1", "INSERT INTO sdml.t (n, r) SELECT n, RAND() FROM sdml.c WHERE id = 1", "COMMIT")
	}
	run("CREATE TEMPORARY TABLE sdml.tmp (n INT)", "INSERT INTO sdml.tmp VALUES (-42)")
	mid := sourcePos(t, srcDB)

	args := []string{"replicate", "--source", binlaneURL(t, src, "sdml"), "--target", binlaneURL(t, dst, "sdml"),
		"--stream", "crash", "--databases", "sdml", "--threads", "4", "--heartbeat", "500ms"}
	binlane := func(extra ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.CommandContext(ctx, bin, slices.Concat(args, extra)...)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd, &logs
	}
	kills, advanced := 0, 0
	for streamRow(t, dstDB).pos != mid && advanced < 5 {
		if kills > 40 {
			t.Fatalf("%d kills, the position advanced after %d (at %q)", kills, advanced, streamRow(t, dstDB).pos)
		}
		extra := []string(nil)
		if streamRow(t, dstDB).pos == "" {
			// Killed before it saved a position: a run without one would
			// start at the source's current position.
			extra = []string{"--start-gtid", start}
		}
		cmd, logs := binlane(extra...)
		before := streamRow(t, dstDB).pos
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+rand.IntN(500)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		kills++
		if st := streamRow(t, dstDB); st.pos != before {
			advanced++
		} else if st.state == "error" {
			t.Fatalf("the stream stopped: %s\n%s", st.message, tail(logs.String(), 3000))
		}
	}
	t.Logf("%d kills, %d after the position advanced (at %s of %s)", kills, advanced, streamRow(t, dstDB).pos, mid)
	// The rest in one run, which ends at mid; then binlane dies as if killed
	// there: its sessions' temporary tables are gone.
	cmd, logs := binlane("--stop-at-gtid", mid)
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("run to %s: %v\n%s", mid, err, tail(logs.String(), 3000))
	}
	t.Logf("the last run applied up to %s in %v", mid, time.Since(began).Round(time.Millisecond))
	verifyEqual(t, srcDB, dstDB, "sdml")

	// The temporary table went with the killed run's connection.
	run("INSERT INTO sdml.t (n, r) SELECT n, 0 FROM sdml.tmp")
	end := sourcePos(t, srcDB)
	cmd, logs = binlane("--stop-at-gtid", end)
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(logs.String(), "reads temporary table `sdml`.`tmp`") {
		t.Fatalf("the run after the kill ended with %v; want exit status 2 naming the temporary table:\n%s", err, tail(logs.String(), 3000))
	}
	if st := streamRow(t, dstDB); st.pos != mid || st.state != "error" {
		t.Fatalf("position %q state %q, want %q in state error", st.pos, st.state, mid)
	}
	var n int
	dstDB.QueryRow("SELECT COUNT(*) FROM sdml.t WHERE n = -42").Scan(&n)
	if n != 0 {
		t.Fatal("the refused statement changed the target")
	}
}
