package replica

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/wire"
)

// bigTransaction is one transaction of n row events of 64 KiB, so that a
// connection break can be made to land inside it: it must be larger than
// what the source can park in socket buffers (several MiB on loopback), or
// the stream would read it all even after the source dropped the
// connection.
func bigTransaction(n int, base int) string {
	var b strings.Builder
	b.WriteString("BEGIN;")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "INSERT INTO d.t VALUES (%d, REPEAT('x', 65536));", base+i)
	}
	b.WriteString("COMMIT")
	return b.String()
}

func smallTransactions(n, base int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("INSERT INTO d.t VALUES (%d, 'small')", base+i)
	}
	return out
}

// inside reads until the consumer is in the middle of the big transaction.
func (c *consumer) inside(rowsSeen int) {
	c.t.Helper()
	n := 0
	c.until("the middle of a transaction", func(m binlog.Message) bool {
		ev := m.Event
		if ev == nil {
			return false
		}
		if _, ok := ev.Data.(*binlog.RowsEvent); ok && c.tr.InGroup() {
			n++
		}
		return n >= rowsSeen
	})
}

// KILL of the dump thread, then a restart of the source, each while the
// consumer holds half a transaction: the consumer sees a *Restart and then
// every transaction exactly once, in order.
func TestReconnectAfterKillAndRestart(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v MEDIUMTEXT)")
	srv.ExecT(t, smallTransactions(20, 1000)...)
	srv.ExecT(t, bigTransaction(400, 0))
	srv.ExecT(t, smallTransactions(20, 2000)...)
	cfg := baseConfig(t, srv)
	cfg.QueueBytes = 8 << 10 // keep the reader close behind the consumer
	c := newConsumer(t, openT(t, cfg))

	c.inside(50)
	db := srv.OpenT(t, "")
	if _, err := db.Exec(fmt.Sprintf("KILL %d", dumpThreadID(t, srv))); err != nil {
		t.Fatal(err)
	}
	c.untilGTID(lastSeq(t, srv))
	if len(c.restarts) != 1 || c.partial != 1 {
		t.Fatalf("after KILL: %d restarts (%d inside a transaction), want 1 (1)", len(c.restarts), c.partial)
	}

	srv.ExecT(t, bigTransaction(400, 10000))
	c.inside(50)
	// Keep consuming while the source restarts: a consumer that stalls
	// keeps the source's dump thread blocked in a write, and MariaDB's
	// clean shutdown then waits for it (about 20s) before closing it.
	restarted := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err := srv.Restart(ctx)
		if err == nil {
			err = srv.Exec(ctx, smallTransactions(10, 3000)...)
		}
		restarted <- err
	}()
	// Slowly, though: a consumer that reads the rest of the transaction
	// before the server closes the dump thread sees the restart between
	// transactions (the test failed so about one run in four).
	c.until("the restart", func(binlog.Message) bool {
		time.Sleep(2 * time.Millisecond)
		return len(c.restarts) == 2
	})
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	c.untilGTID(lastSeq(t, srv))
	if len(c.restarts) != 2 || c.partial != 2 {
		t.Fatalf("after restart: %d restarts (%d inside a transaction), want 2 (2)", len(c.restarts), c.partial)
	}
	c.checkSequence(1, lastSeq(t, srv))
	for _, r := range c.restarts {
		t.Logf("restart: %s", r.Reason)
	}
}

// A consumer that stops taking events for longer than the read timeout (an
// applier behind: a transaction sent in parts, a slow target) holds the
// reader at the queue's bound while the source still has bytes to send: the
// source is not silent, and the stream must keep its connection. The
// watchdog counted the time blocked at the bound as silence and dropped the
// connection, and a transaction sent in parts then started over from the
// saved position (CI, TestHugeTransactionStreams).
func TestSlowConsumerIsNotADeadPeer(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v MEDIUMTEXT)")
	srv.ExecT(t, bigTransaction(200, 0)) // 12.5 MiB: more than the socket buffers park
	cfg := baseConfig(t, srv)
	cfg.HeartbeatPeriod = 100 * time.Millisecond // a read timeout of 300 ms
	cfg.QueueBytes = 8 << 10
	c := newConsumer(t, openT(t, cfg))
	c.inside(5)
	time.Sleep(2 * time.Second) // the reader waits at the queue's bound meanwhile
	c.untilGTID(lastSeq(t, srv))
	if len(c.restarts) != 0 {
		t.Fatalf("%d restarts while the consumer paused, the first: %s", len(c.restarts), c.restarts[0].Reason)
	}
	c.checkSequence(1, lastSeq(t, srv))
}

// Heartbeats arrive while the source is idle, carry its position, and a
// peer that goes silent is detected within a few heartbeat periods.
func TestHeartbeatsAndDeadPeer(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v MEDIUMTEXT)")
	px := startProxy(t, srv.Addr())
	cfg := baseConfig(t, srv)
	cfg.Addr = px.addr()
	cfg.HeartbeatPeriod = 200 * time.Millisecond
	s := openT(t, cfg)
	c := newConsumer(t, s)
	c.untilGTID(lastSeq(t, srv))
	c.until("three heartbeats", func(binlog.Message) bool { return len(c.heartbeats) >= 3 })
	if hb := c.heartbeats[2]; hb.File != "binlog.000001" || hb.Pos == 0 {
		t.Fatalf("heartbeat %+v", hb)
	}
	if pos := s.Position(); pos.Pos != c.heartbeats[2].Pos {
		t.Errorf("idle position %d, heartbeat says %d", pos.Pos, c.heartbeats[2].Pos)
	}

	// A real rotate while streaming: the next heartbeats name the new file,
	// and the idle position follows.
	srv.ExecT(t, "FLUSH BINARY LOGS", "INSERT INTO d.t VALUES (1, 'after rotate')")
	c.untilGTID(lastSeq(t, srv))
	n := len(c.heartbeats)
	c.until("a heartbeat in the new file", func(binlog.Message) bool { return len(c.heartbeats) > n })
	if hb := c.heartbeats[len(c.heartbeats)-1]; c.rotates != 1 || hb.File != "binlog.000002" || s.Position().File != "binlog.000002" {
		t.Fatalf("after FLUSH BINARY LOGS: %d rotates, heartbeat %+v, position %+v", c.rotates, hb, s.Position())
	}

	px.freeze()
	frozen := time.Now()
	c.until("a restart", func(m binlog.Message) bool { return m.Restart != nil })
	if d := time.Since(frozen); d > 3*time.Second {
		t.Errorf("dead peer noticed after %s", d)
	}
	if !strings.Contains(c.restarts[0].Reason, "presumed dead") {
		t.Errorf("restart reason %q", c.restarts[0].Reason)
	}
	srv.ExecT(t, smallTransactions(3, 10)...)
	c.untilGTID(lastSeq(t, srv))
	c.checkSequence(1, lastSeq(t, srv))
}

// Position mode: start from a file and offset, survive a KILL, and resume
// from the file position of the last complete transaction.
func TestFilePositionMode(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v MEDIUMTEXT)")
	start := currentPositionT(t, srv)
	srv.ExecT(t, bigTransaction(400, 0))
	srv.ExecT(t, smallTransactions(5, 1000)...)
	cfg := baseConfig(t, srv)
	cfg.Start = StartAtFile(start.File, start.Pos)
	cfg.QueueBytes = 8 << 10
	c := newConsumer(t, openT(t, cfg))
	c.inside(30)
	db := srv.OpenT(t, "")
	if _, err := db.Exec(fmt.Sprintf("KILL %d", dumpThreadID(t, srv))); err != nil {
		t.Fatal(err)
	}
	c.untilGTID(lastSeq(t, srv))
	first, _ := start.GTIDs.Domain(0)
	c.checkSequence(first.Seq+1, lastSeq(t, srv))
	if len(c.restarts) != 1 || c.partial != 1 {
		t.Fatalf("%d restarts, %d partial", len(c.restarts), c.partial)
	}
}

func currentPositionT(t *testing.T, srv *sandbox.Server) Position {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pos, err := CurrentPosition(ctx, Config{Config: wire.Config{Addr: srv.Addr(), User: sourceAccount(t, srv), Password: sandbox.AccountPassword}})
	if err != nil {
		t.Fatal(err)
	}
	return pos
}
