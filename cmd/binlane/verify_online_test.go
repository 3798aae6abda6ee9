package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestVerifyOnline compares source and target while the source takes
// writes and the stream runs: first equal, then with a difference planted
// on the target (found, with its key), then, load stopped and caught up,
// equal again after the repair. The verifying accounts have exactly the
// README's grants: SELECT on both sides, and UPDATE on binlane.streams on
// the target for the pause request.
func TestVerifyOnline(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	srcURL, dstURL := binlaneURL(t, src, "app"), binlaneURL(t, dst, "app")
	src.ExecT(t, "CREATE DATABASE marker")
	start := sourcePos(t, srcDB)
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT, u INT UNIQUE)",
		"INSERT INTO app.t SELECT seq, 0, seq FROM app.seq_1_to_3000",
		"CREATE TABLE app.quiet (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO app.quiet SELECT seq, CONCAT('row ', seq) FROM app.seq_1_to_500")
	src.ExecT(t, "CREATE USER checker@'%' IDENTIFIED BY '"+checkerPassword+"'", "GRANT SELECT ON *.* TO checker@'%'")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	_, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "m", "--start-gtid", start,
		"--databases", "app", "--workers", "4", "--heartbeat", "500ms")
	defer stop()
	caughtUp := func() {
		want, _ := gtid.ParseSet(sourcePos(t, srcDB))
		waitFor(t, 90*time.Second, "the stream to catch up", func() bool {
			select {
			case err := <-done:
				t.Fatalf("replicate ended: %v", err)
			default:
			}
			st, ok, _ := position.Load(ctx, dstDB, "m")
			got, _ := gtid.ParseSet(st.GTID)
			return ok && got.ContainsSet(want)
		})
	}
	caughtUp()
	dst.ExecT(t, "CREATE USER checker@'%' IDENTIFIED BY '"+checkerPassword+"'", "GRANT SELECT ON *.* TO checker@'%'",
		"GRANT UPDATE ON binlane.streams TO checker@'%'")
	t.Setenv("CHECKER_PW", checkerPassword)
	args := []string{"--source", "mysql://checker@" + src.Addr() + "/app", "--target", "mysql://checker@" + dst.Addr() + "/",
		"--source-password-env", "CHECKER_PW", "--target-password-env", "CHECKER_PW", "--chunk-rows", "500", "--parallel", "2"}
	offline := args
	args = append(args[:len(args):len(args)], "--online", "--stream", "m")

	// The load: updates, unique swaps, deletes and inserts of app.t.
	var writes atomic.Int64
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := src.OpenT(t, "app")
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for loadCtx.Err() == nil {
				id := 1 + rng.IntN(3000)
				var q string
				switch rng.IntN(4) {
				case 0:
					q = fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id = %d", id)
				case 1:
					q = fmt.Sprintf("UPDATE t SET u = -u WHERE id = %d", id)
				case 2:
					q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
				default:
					q = fmt.Sprintf("INSERT INTO t VALUES (%d, 1, %d) ON DUPLICATE KEY UPDATE v = v + 1", id, id)
				}
				// ctx, not loadCtx: a statement cancelled mid-way would still
				// commit on the source after the load stopped, past what the
				// final verify waits for.
				if _, err := db.ExecContext(ctx, q); err == nil {
					writes.Add(1)
				}
				// A steady load the stream keeps up with: the verify waits
				// for it to reach each snapshot's position.
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	defer func() { stopLoad(); wg.Wait() }()
	waitFor(t, 30*time.Second, "the load to start", func() bool { return writes.Load() > 200 })

	before := writes.Load()
	out, err := runVerifyCmd(t, args...)
	if err != nil {
		t.Fatalf("online verify under load: %v\n%s", err, out)
	}
	if !strings.Contains(out, "equal") {
		t.Errorf("online verify report:\n%s", out)
	}
	if writes.Load()-before < 50 {
		t.Errorf("only %d source writes while the online verify ran: not a test under load", writes.Load()-before)
	}
	waitFor(t, 10*time.Second, "the stream to go on after the verify", func() bool {
		st, _, _ := position.Load(ctx, dstDB, "m")
		return st.State == position.StateRunning && st.PauseAt == ""
	})

	// A difference planted on the target, outside the stream.
	dst.ExecT(t, "SET sql_log_bin = 0", "UPDATE app.quiet SET v = 'planted' WHERE id = 77")
	out, err = runVerifyCmd(t, args...)
	if err == nil || !strings.Contains(out, "77") || !strings.Contains(out, "planted") {
		t.Errorf("online verify missed the planted difference: %v\n%s", err, out)
	}

	// The load stops; the stream keeps going (it was not left paused).
	stopLoad()
	wg.Wait()
	src.ExecT(t, "INSERT INTO app.quiet VALUES (1000, 'after')")
	caughtUp()
	dst.ExecT(t, "SET sql_log_bin = 0", "UPDATE app.quiet SET v = 'row 77' WHERE id = 77")
	if out, err := runVerifyCmd(t, offline...); err != nil {
		t.Fatalf("final verify: %v\n%s", err, out)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("replicate: %v", err)
	}
}

// TestVerifyResume: --resume-file leaves out the tables an earlier run
// found equal and records the ones this run finds equal.
func TestVerifyResume(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	for _, s := range []*sandbox.Server{src, tgt} {
		s.ExecT(t, "CREATE USER checker@'%' IDENTIFIED BY '"+checkerPassword+"'", "GRANT SELECT ON *.* TO checker@'%'",
			"CREATE DATABASE app", "CREATE TABLE app.a (id INT PRIMARY KEY)", "CREATE TABLE app.b (id INT PRIMARY KEY, v INT)",
			"INSERT INTO app.a VALUES (1), (2)", "INSERT INTO app.b VALUES (1, 1)")
	}
	tgt.ExecT(t, "UPDATE app.b SET v = 2", "UPDATE app.a SET id = 3 WHERE id = 2")
	t.Setenv("CHECKER_PW", checkerPassword)
	file := t.TempDir() + "/verified"
	if err := os.WriteFile(file, []byte("app.a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--source", "mysql://checker@" + src.Addr() + "/app", "--target", "mysql://checker@" + tgt.Addr() + "/",
		"--source-password-env", "CHECKER_PW", "--target-password-env", "CHECKER_PW", "--resume-file", file}
	out, err := runVerifyCmd(t, args...)
	if err == nil || strings.Contains(out, "app.a") || !strings.Contains(out, "app.b") {
		t.Errorf("resumed run: %v\n%s", err, out) // app.a differs, but an earlier run said equal: left out
	}
	tgt.ExecT(t, "UPDATE app.b SET v = 1")
	if out, err := runVerifyCmd(t, args...); err != nil {
		t.Errorf("second run: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(file)
	if string(b) != "app.a\napp.b\n" {
		t.Errorf("resume file: %q", b)
	}
}
